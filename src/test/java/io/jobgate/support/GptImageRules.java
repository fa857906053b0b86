package io.jobgate.support;

import java.util.Base64;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.extension.ResponseDefinitionTransformerV2;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import io.jobgate.common.Json;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;

/**
 * A stand-in for OpenAI's {@code POST /v1/images/generations} with gpt-image-1 that enforces its
 * documented rules (provider-apis §1.2): {@code size} one of 1024x1024, 1536x1024, 1024x1536 (or
 * auto), {@code output_format} png, jpeg or webp, no {@code response_format}, n 1–10, prompt at most
 * 32000 characters. A valid request gets a real image of exactly that size and format (base64);
 * anything else the documented 400 {@code invalid_request_error}.
 */
public final class GptImageRules implements ResponseDefinitionTransformerV2 {

    public static final String NAME = "gpt-image-1-rules";
    static final Set<String> SIZES = Set.of("1024x1024", "1536x1024", "1024x1536", "auto");

    /** Routes every image generation of {@code fake} through these rules. */
    public static void install(WireMockServer fake) {
        fake.stubFor(post("/v1/images/generations").atPriority(10).willReturn(aResponse().withTransformers(NAME)));
    }

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public boolean applyGlobally() {
        return false;
    }

    @Override
    public ResponseDefinition transform(ServeEvent event) {
        JsonNode body;
        try {
            body = Json.MAPPER.readTree(event.getRequest().getBodyAsString());
        } catch (Exception e) {
            return invalid("We could not parse the JSON body of your request.", null);
        }
        if (!"gpt-image-1".equals(body.path("model").asText())) {
            return invalid("Invalid value for 'model'.", "model");
        }
        String prompt = body.path("prompt").asText("");
        if (prompt.isEmpty() || prompt.length() > 32000) {
            return invalid("Invalid 'prompt': string too long or empty.", "prompt");
        }
        String size = body.path("size").asText("auto");
        if (!SIZES.contains(size)) {
            return invalid("Invalid value: '" + size + "'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.", "size");
        }
        String format = body.path("output_format").asText("png");
        if (!Set.of("png", "jpeg", "webp").contains(format)) {
            return invalid("Invalid value for 'output_format'.", "output_format");
        }
        if (body.has("response_format")) {
            return invalid("Unknown parameter: 'response_format'.", "response_format");
        }
        int n = body.path("n").asInt(1);
        if (n < 1 || n > 10) {
            return invalid("Invalid value for 'n'.", "n");
        }
        String[] wh = (size.equals("auto") ? "1024x1024" : size).split("x");
        int width = Integer.parseInt(wh[0]);
        int height = Integer.parseInt(wh[1]);
        byte[] image = format.equals("jpeg") ? Samples.jpeg(width, height) : Samples.png(width, height);
        return ResponseDefinitionBuilder.responseDefinition().withStatus(200).withHeader("Content-Type", "application/json")
                .withHeader("x-request-id", "req_" + Long.toHexString(System.nanoTime()))
                .withBody("{\"created\": 1713833628, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(image)
                        + "\"}], \"output_format\": \"" + format + "\", \"size\": \"" + size + "\", \"quality\": \"medium\"}")
                .build();
    }

    private static ResponseDefinition invalid(String message, String param) {
        return ResponseDefinitionBuilder.responseDefinition().withStatus(400).withHeader("Content-Type", "application/json")
                .withBody("{\"error\": {\"message\": " + Json.write(message) + ", \"type\": \"invalid_request_error\", \"param\": "
                        + (param == null ? "null" : "\"" + param + "\"") + ", \"code\": \"invalid_value\"}}")
                .build();
    }
}
