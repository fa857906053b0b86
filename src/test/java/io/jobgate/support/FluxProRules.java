package io.jobgate.support;

import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.extension.ResponseDefinitionTransformerV2;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import io.jobgate.common.Json;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;

/**
 * A stand-in for Replicate running {@code black-forest-labs/flux-1.1-pro} that enforces the model's
 * documented input rules: with {@code aspect_ratio: custom}, {@code width} and {@code height} are
 * required, 256–1440 and multiples of 32; {@code output_format} is webp, jpg or png. A valid create
 * gets a {@code starting} prediction (201) that is {@code succeeded} on the next GET, with an output
 * file of exactly that size and format; an invalid one the RFC 7807 422 Replicate answers.
 */
public final class FluxProRules implements ResponseDefinitionTransformerV2 {

    public static final String NAME = "flux-1.1-pro-rules";
    public static final String CREATE = "/v1/models/black-forest-labs/flux-1.1-pro/predictions";

    private record Rendering(int width, int height, String format) {
    }

    private final Map<String, Rendering> predictions = new ConcurrentHashMap<>();

    /** Routes creates, prediction GETs and output files of {@code fake} through these rules. */
    public static void install(WireMockServer fake) {
        fake.stubFor(post(CREATE).atPriority(10).willReturn(aResponse().withTransformers(NAME)));
        fake.stubFor(get(urlPathMatching("/v1/predictions/flux-.*")).atPriority(10).willReturn(aResponse().withTransformers(NAME)));
        fake.stubFor(get(urlPathMatching("/delivery/flux-.*")).atPriority(10).willReturn(aResponse().withTransformers(NAME)));
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
        String path = event.getRequest().getUrl();
        String base = event.getRequest().getAbsoluteUrl().substring(0, event.getRequest().getAbsoluteUrl().indexOf(path));
        if (path.startsWith("/delivery/")) {
            String id = path.substring("/delivery/".length()).replaceFirst("\\.[a-z]+$", "");
            Rendering r = predictions.get(id);
            byte[] image = r.format().equals("jpg") ? Samples.jpeg(r.width(), r.height()) : Samples.png(r.width(), r.height());
            return ResponseDefinitionBuilder.responseDefinition().withStatus(200)
                    .withHeader("Content-Type", r.format().equals("jpg") ? "image/jpeg" : "image/png").withBody(image).build();
        }
        if (path.startsWith("/v1/predictions/")) {
            String id = path.substring("/v1/predictions/".length());
            Rendering r = predictions.get(id);
            return r == null ? problem(404, "Not found", "Prediction not found")
                    : prediction(base, id, "succeeded", "\"" + base + "/delivery/" + id + "." + r.format() + "\"", 200);
        }
        JsonNode input;
        try {
            input = Json.MAPPER.readTree(event.getRequest().getBodyAsString()).path("input");
        } catch (Exception e) {
            return problem(400, "Bad request", "body is not JSON");
        }
        if (input.path("prompt").asText("").isEmpty()) {
            return problem(422, "Input validation failed", "input: prompt is required");
        }
        String format = input.path("output_format").asText("webp");
        if (!Set.of("webp", "jpg", "png").contains(format)) {
            return problem(422, "Input validation failed", "input.output_format: must be one of webp, jpg, png");
        }
        if (!"custom".equals(input.path("aspect_ratio").asText())) {
            return problem(422, "Input validation failed", "this stand-in only renders aspect_ratio custom");
        }
        for (String side : new String[] {"width", "height"}) {
            JsonNode v = input.path(side);
            if (!v.canConvertToInt() || v.asInt() < 256 || v.asInt() > 1440 || v.asInt() % 32 != 0) {
                return problem(422, "Input validation failed", "input." + side
                        + ": must be a multiple of 32 between 256 and 1440 (was " + v + ")");
            }
        }
        String id = "flux-" + UUID.randomUUID().toString().substring(0, 12);
        predictions.put(id, new Rendering(input.path("width").asInt(), input.path("height").asInt(), format));
        return prediction(base, id, "starting", "null", 201);
    }

    private static ResponseDefinition prediction(String base, String id, String status, String output, int http) {
        return ResponseDefinitionBuilder.responseDefinition().withStatus(http).withHeader("Content-Type", "application/json")
                .withBody("{\"id\": \"" + id + "\", \"model\": \"black-forest-labs/flux-1.1-pro\", \"version\": \"hidden\", "
                        + "\"input\": {}, \"output\": " + output + ", \"data_removed\": false, \"error\": null, \"status\": \""
                        + status + "\", \"created_at\": \"2026-11-30T10:00:00Z\""
                        + (status.equals("succeeded") ? ", \"metrics\": {\"predict_time\": 3.1, \"total_time\": 3.5}" : "")
                        + ", \"urls\": {\"get\": \"" + base + "/v1/predictions/" + id + "\", \"cancel\": \"" + base
                        + "/v1/predictions/" + id + "/cancel\", \"web\": \"x\"}}")
                .build();
    }

    private static ResponseDefinition problem(int status, String title, String detail) {
        return ResponseDefinitionBuilder.responseDefinition().withStatus(status).withHeader("Content-Type", "application/problem+json")
                .withBody("{\"type\": null, \"title\": " + Json.write(title) + ", \"status\": " + status + ", \"detail\": "
                        + Json.write(detail) + "}")
                .build();
    }
}
