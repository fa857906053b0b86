package io.jobgate.api;

import io.jobgate.common.Json;
import java.util.Map;

import org.apache.camel.Exchange;
import org.apache.camel.Message;

/** Writes an HTTP answer on the exchange; request headers are dropped so none is echoed back. */
public final class HttpReply {

    public static final String JSON = "application/json";
    public static final String PROBLEM_JSON = "application/problem+json";

    private HttpReply() {
    }

    public static void json(Exchange exchange, int status, Object body, Map<String, String> headers) {
        write(exchange, status, JSON, Json.write(body), headers);
    }

    public static void write(Exchange exchange, int status, String contentType, Object body, Map<String, String> headers) {
        Message message = exchange.getMessage();
        message.getHeaders().clear(); // all of them (removeHeaders("*") matched and removed them one by one)
        message.setHeader(Exchange.HTTP_RESPONSE_CODE, status);
        message.setHeader(Exchange.CONTENT_TYPE, contentType);
        headers.forEach(message::setHeader);
        message.setBody(body);
    }
}
