package io.jobgate.provider;

import java.util.Map;

import io.jobgate.job.ErrorCategory;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A provider's error table, with OpenAI's documented error bodies ({"error": {message, type, param, code}}). */
class ProviderErrorsTest {

    static final ProviderErrors OPENAI = ProviderErrors.parse("jobgate.provider.openai.", Map.of(
            "error-code-fields", "error.code,error.type",
            "error.429.insufficient_quota", "auth: quota exhausted, billing action needed",
            "error.400.moderation_blocked", "declined: the safety system declined the request",
            "error.402.*", "auth"));

    static String body(String type, String code) {
        return "{\"error\": {\"message\": \"m\", \"type\": \"" + type + "\", \"param\": null, \"code\": "
                + (code == null ? "null" : "\"" + code + "\"") + "}}";
    }

    @Test
    void aStatusAndCodeNamedInTheTableDecideTheCategory() {
        assertThat(OPENAI.classify("openai", 429, body("insufficient_quota", "insufficient_quota")))
                .hasValueSatisfying(v -> {
                    assertThat(v.category()).isEqualTo(ErrorCategory.AUTH);
                    assertThat(v.message()).isEqualTo("openai HTTP 429 insufficient_quota: quota exhausted, billing action needed");
                });
        assertThat(OPENAI.classify("openai", 400, body("image_generation_user_error", "moderation_blocked")))
                .map(ProviderErrors.Verdict::category).hasValue(ErrorCategory.DECLINED);
        // the type stands in when the code is null
        assertThat(OPENAI.classify("openai", 429, body("insufficient_quota", null)))
                .map(ProviderErrors.Verdict::category).hasValue(ErrorCategory.AUTH);
        assertThat(OPENAI.classify("openai", 402, "not json")).map(ProviderErrors.Verdict::category).hasValue(ErrorCategory.AUTH);
    }

    @Test
    void whatTheTableDoesNotNameIsLeftToTheStatus() {
        assertThat(OPENAI.classify("openai", 429, body("requests", "rate_limit_exceeded"))).isEmpty();
        assertThat(OPENAI.classify("openai", 500, "<html>oops</html>")).isEmpty();
        assertThat(ProviderErrors.NONE.classify("x", 429, body("insufficient_quota", "insufficient_quota"))).isEmpty();
    }

    @Test
    void aRowNamingNoCategoryOrNoStatusIsABadSetting() {
        assertThatThrownBy(() -> ProviderErrors.parse("jobgate.provider.x.", Map.of("error.429.quota", "billing")))
                .hasMessageContaining("jobgate.provider.x.error.429.quota");
        assertThatThrownBy(() -> ProviderErrors.parse("jobgate.provider.x.", Map.of("error.quota", "auth")))
                .hasMessageContaining("error.<status>.<code>");
    }
}
