package io.jobgate.output;

import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A promoted output's record, on the object and back: what the sweeper may succeed a job with, and what it may not. */
class PromotedOutputTest {

    static final PromotedOutput IMAGE = new PromotedOutput("outputs/acme/j/output.png", "outputs/acme/j/manifest.json",
            new OutputCheck.Checked("image/png", 1024, 1536), 4242, "ab12", "openai", "stable@1f2e", 2);

    @Test
    void theObjectsRecordReadBackIsTheJobsResult() throws Exception {
        PromotedOutput back = PromotedOutput.fromMetadata(IMAGE.outputKey(), IMAGE.manifestKey(), 4242, IMAGE.metadata(),
                "openai", "stable@1f2e").orElseThrow();
        assertThat(back).isEqualTo(IMAGE);
        JsonNode result = Json.MAPPER.readTree(back.resultJson());
        assertThat(result.path("attempt").asInt()).isEqualTo(2);
        assertThat(result.path("width").asInt()).isEqualTo(1024);
        assertThat(result.path("bytes").asLong()).isEqualTo(4242);
        assertThat(result.path("adapter_revision").asText()).isEqualTo("stable@1f2e");
        assertThat(result.has("duration_ms")).isFalse();
    }

    @Test
    void aVideosDurationAndATextsMissingSizeComeBackAsWritten() {
        PromotedOutput video = new PromotedOutput("k", "m", new OutputCheck.Checked("video/mp4", 1280, 720, 5_040L), 9, "cd", "fal", "r", 1);
        assertThat(PromotedOutput.fromMetadata("k", "m", 9, video.metadata(), "fal", "r")).contains(video);
        PromotedOutput text = new PromotedOutput("k", "m", new OutputCheck.Checked("application/json", null, null), 9, "ef", "openai", "r", 1);
        assertThat(text.metadata()).doesNotContainKeys(PromotedOutput.WIDTH, PromotedOutput.HEIGHT);
        assertThat(PromotedOutput.fromMetadata("k", "m", 9, text.metadata(), "openai", "r")).contains(text);
    }

    @Test
    void namesAreReadInAnyCaseAsSomeServersReturnThem() {
        Map<String, String> capitalised = new HashMap<>();
        IMAGE.metadata().forEach((k, v) -> capitalised.put(k.substring(0, 1).toUpperCase() + k.substring(1), v));
        assertThat(PromotedOutput.fromMetadata(IMAGE.outputKey(), IMAGE.manifestKey(), 4242, capitalised, "openai", "stable@1f2e"))
                .contains(IMAGE);
    }

    @Test
    void anObjectWithoutAWholeRecordIsNoEvidence() {
        Map<String, String> noAttempt = new HashMap<>(IMAGE.metadata());
        noAttempt.remove(PromotedOutput.ATTEMPT);
        Map<String, String> badAttempt = new HashMap<>(IMAGE.metadata());
        badAttempt.put(PromotedOutput.ATTEMPT, "two");
        assertThat(PromotedOutput.fromMetadata("k", "m", 1, Map.of(), "openai", "r")).isEmpty();
        assertThat(PromotedOutput.fromMetadata("k", "m", 1, noAttempt, "openai", "r")).isEmpty();
        assertThat(PromotedOutput.fromMetadata("k", "m", 1, badAttempt, "openai", "r")).isEmpty();
        assertThat(PromotedOutput.fromMetadata("k", "m", 1, IMAGE.metadata(), "openai", null)).as("no revision on the job's row").isEmpty();
    }

    @Test
    void theRecordOnTheObjectIsAsciiAndSmall() {
        String all = String.join("", IMAGE.metadata().keySet()) + String.join("", IMAGE.metadata().values());
        assertThat(all).matches("\\p{ASCII}*");
        assertThat(all.length()).isLessThan(2048);
        assertThat(IMAGE.metadata().values()).doesNotContain("stable@1f2e", "openai");
    }
}
