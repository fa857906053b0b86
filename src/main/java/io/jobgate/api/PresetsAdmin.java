package io.jobgate.api;

import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.jobgate.preset.PresetDefaults;
import org.apache.camel.Exchange;

/**
 * {@code GET /v1/admin/presets}: every preset's versions and the default new jobs get;
 * {@code PUT /v1/admin/presets/{presetId}/default} with {@code {"version": 1, "operator": "who",
 * "reason": "why"}} chooses it ({@code "version": null}: the latest again). Presets stay immutable.
 */
public final class PresetsAdmin {

    private final PresetDefaults defaults;

    public PresetsAdmin(PresetDefaults defaults) {
        this.defaults = defaults;
    }

    public void list(Exchange exchange) {
        HttpReply.json(exchange, 200, Map.of("presets", defaults.all()), Map.of());
    }

    public void setDefault(Exchange exchange) {
        String presetId = exchange.getIn().getHeader("presetId", String.class);
        JsonNode request = Json.parseObject(exchange.getIn().getBody(byte[].class));
        JsonNode version = request.path("version");
        if (version.isMissingNode() || !(version.isNull() || version.canConvertToInt() && version.isIntegralNumber())) {
            throw ApiProblem.of(400, "invalid_parameter", "\"version\" is a version number of the preset, or null for "
                    + "the latest.").with("field", "version");
        }
        String operator = AdminApi.operator(request, "sets the default");
        String reason = AdminApi.text(request, "reason", AdminApi.MAX_REASON);
        HttpReply.json(exchange, 200, defaults.set(presetId, version.isNull() ? null : version.intValue(), operator, reason),
                Map.of());
    }
}
