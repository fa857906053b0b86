package io.jobgate.api;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * An operator chooses which version of a preset new jobs get when they name none (a preset's
 * rollback), recorded with who and when; explicit versions and the presets themselves are untouched.
 */
class PresetDefaultsTest extends GatewayTestBase {

    final io.jobgate.support.MovableClock clock = movableClock();

    int admittedVersion(String versionField) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", %s "aspect_class": "portrait",
                 "inputs": {"supplier_name": "Defaults AG", "invoice_id": "INV-7", "currency": "EUR", "line_items": []}}"""
                .formatted(versionField));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return r.json().path("preset").path("version").asInt();
    }

    ApiClient.Response setDefault(String key, String preset, String body) {
        return api.send(api.request("/v1/admin/presets/" + preset + "/default", key).header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    JsonNode preset(String id) {
        ApiClient.Response r = api.get(ADMIN, "/v1/admin/presets");
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        for (JsonNode p : r.json().path("presets")) {
            if (p.path("preset_id").asText().equals(id)) {
                return p;
            }
        }
        throw new AssertionError("no preset " + id + " in " + r.text());
    }

    @Test
    void anOperatorRollsThePresetBackForNewJobsOnly() {
        String digests = Db.rows("SELECT preset_id, version, file_sha256 FROM preset_versions ORDER BY 1, 2").toString();
        assertThat(preset("invoice-clean").path("default_version").asInt()).isEqualTo(2);
        assertThat(preset("invoice-clean").path("pinned").asBoolean()).isFalse();
        assertThat(admittedVersion("")).as("the latest by default").isEqualTo(2);

        ApiClient.Response set = setDefault(ADMIN, "invoice-clean",
                "{\"version\": 1, \"operator\": \"alice\", \"reason\": \"v2 renders totals badly\"}");
        assertThat(set.status()).as(set.text()).isEqualTo(200);
        assertThat(set.json().path("default_version").asInt()).isEqualTo(1);
        assertThat(set.json().path("latest_version").asInt()).isEqualTo(2);
        assertThat(set.json().path("set_by").asText()).isEqualTo("alice");
        assertThat(set.json().path("set_at").asText()).isNotEmpty();
        assertThat(set.json().path("changes").get(0).path("version").asInt()).isEqualTo(1);
        assertThat(set.json().path("changes").get(0).path("previous_version").isNull()).isTrue();

        assertThat(admittedVersion("")).as("new jobs that name no version").isEqualTo(1);
        assertThat(admittedVersion("\"preset_version\": 2,")).as("a named version is kept").isEqualTo(2);

        ApiClient.Response latest = setDefault(ADMIN, "invoice-clean", "{\"version\": null, \"operator\": \"bob\"}");
        assertThat(latest.status()).as(latest.text()).isEqualTo(200);
        assertThat(latest.json().path("default_version").asInt()).isEqualTo(2);
        assertThat(latest.json().path("pinned").asBoolean()).isFalse();
        assertThat(latest.json().path("changes")).hasSize(2);
        assertThat(latest.json().path("changes").get(0).path("previous_version").asInt()).isEqualTo(1);
        assertThat(latest.json().path("changes").get(0).path("set_by").asText()).isEqualTo("bob");
        assertThat(admittedVersion("")).isEqualTo(2);

        assertThat(Db.rows("SELECT preset_id, version, file_sha256 FROM preset_versions ORDER BY 1, 2").toString())
                .as("presets stay immutable").isEqualTo(digests);
    }

    @Test
    void anotherInstancesChoiceCountsHereWithinASecond() {
        // Another instance chose v1 of invoice-scan (its row and change, as the endpoint writes them).
        Db.execute("INSERT INTO preset_defaults (preset_id, version, set_by, set_at) VALUES ('invoice-scan', 1, 'other', now())");
        clock.advance(Duration.ofSeconds(1));
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-scan", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "Scan AG", "invoice_id": "INV-8", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        assertThat(r.json().path("preset").path("version").asInt()).isEqualTo(1);
        assertThat(setDefault(ADMIN, "invoice-scan", "{\"version\": null, \"operator\": \"test\"}").status()).isEqualTo(200);
    }

    @Test
    void badChoicesAreRefusedWithStableCodes() {
        assertThat(setDefault(ADMIN, "invoice-clean", "{\"version\": 9, \"operator\": \"a\"}").code()).isEqualTo("unknown_preset_version");
        assertThat(setDefault(ADMIN, "invoice-clean", "{\"version\": 9, \"operator\": \"a\"}").status()).isEqualTo(422);
        assertThat(setDefault(ADMIN, "no-such-preset", "{\"version\": 1, \"operator\": \"a\"}").status()).isEqualTo(404);
        assertThat(setDefault(ADMIN, "no-such-preset", "{\"version\": 1, \"operator\": \"a\"}").code()).isEqualTo("preset_not_found");
        assertThat(setDefault(ADMIN, "invoice-clean", "{\"version\": 1}").code()).isEqualTo("invalid_parameter");
        assertThat(setDefault(ADMIN, "invoice-clean", "{\"version\": \"1\", \"operator\": \"a\"}").code()).isEqualTo("invalid_parameter");
        assertThat(setDefault(ADMIN, "invoice-clean", "{\"operator\": \"a\"}").code()).isEqualTo("invalid_parameter");
        assertThat(setDefault(ADMIN, "invoice-clean", "").code()).isEqualTo("malformed_json");
        assertThat(setDefault(ACME, "invoice-clean", "{\"version\": 1, \"operator\": \"a\"}").status()).isEqualTo(401);
        assertThat(api.get(ACME, "/v1/admin/presets").status()).isEqualTo(401);
        assertThat(preset("invoice-clean").path("pinned").asBoolean()).as("nothing changed").isFalse();
    }
}
