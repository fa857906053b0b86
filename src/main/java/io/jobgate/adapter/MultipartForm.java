package io.jobgate.adapter;

import java.nio.charset.StandardCharsets;

import org.apache.camel.Exchange;
import org.apache.hc.client5.http.entity.mime.MultipartEntityBuilder;
import org.apache.hc.core5.http.ContentType;

/**
 * Adapter helper (bean {@code multipartForm}): builds a {@code multipart/form-data} body for
 * providers that take uploads, such as audio transcription. Text fields come from the exchange
 * properties named {@code form.<field>}; the job's source upload ({@code JobgateSource}) is the file
 * part, named by the property {@code formFile} (default {@code file}), with the source's file name
 * and media type. camel-http sends the entity as is, with its boundary.
 */
public final class MultipartForm {

    public void build(Exchange exchange) {
        // No charset parameter on the multipart type itself (its default would be ISO-8859-1); parts carry their own.
        MultipartEntityBuilder form = MultipartEntityBuilder.create().setCharset(StandardCharsets.UTF_8)
                .setContentType(ContentType.create("multipart/form-data"));
        exchange.getProperties().forEach((name, value) -> {
            if (name.startsWith("form.") && value != null) {
                form.addTextBody(name.substring("form.".length()), value.toString(),
                        ContentType.TEXT_PLAIN.withCharset(StandardCharsets.UTF_8));
            }
        });
        byte[] source = exchange.getProperty(AdapterContract.SOURCE, byte[].class);
        if (source != null) {
            String mediaType = exchange.getProperty(AdapterContract.SOURCE_MEDIA_TYPE, "application/octet-stream", String.class);
            form.addBinaryBody(exchange.getProperty("formFile", "file", String.class), source, ContentType.create(mediaType),
                    exchange.getProperty(AdapterContract.SOURCE_FILE_NAME, "source.bin", String.class));
        }
        exchange.getMessage().removeHeader(Exchange.CONTENT_TYPE);
        exchange.getMessage().setBody(form.build());
    }
}
