package io.jobgate.common;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.logging.Level;
import java.util.logging.LogRecord;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;

/** The two log formats: text as before, and one parseable JSON object per line with the structured fields. */
class LogLinesTest {

    @Test
    void textNamesTimeLevelThreadAndTheAbbreviatedLogger() {
        LogRecord record = new LogRecord(Level.WARNING, "gate closed");
        record.setLoggerName("org.apache.camel.main.Main");

        String line = new LogLines(false).format(record);

        assertThat(line).matches("\\d\\d:\\d\\d:\\d\\d\\.\\d{3} WARN  \\[" + Thread.currentThread().getName()
                + "\\] o\\.a\\.c\\.m\\.Main - gate closed\\n");
    }

    @Test
    void jsonIsOneObjectPerLineWithTheStructuredFieldsAndTheError() throws Exception {
        LogRecord record = new LogRecord(Level.SEVERE, "refused \"x\"\nsecond line");
        record.setLoggerName("jobgate.admission");
        record.setThrown(new IllegalStateException("boom"));
        String line;
        try (LogFields fields = LogFields.of("tenant", "acme", "code", "invalid_input")) {
            line = new LogLines(true).format(record);
        }

        assertThat(line).endsWith("}\n").hasLineCount(1);
        JsonNode json = new ObjectMapper().readTree(line);
        assertThat(json.path("level").asText()).isEqualTo("ERROR");
        assertThat(json.path("loggerName").asText()).isEqualTo("jobgate.admission");
        assertThat(json.path("message").asText()).isEqualTo("refused \"x\"\nsecond line");
        assertThat(json.path("timeMillis").asLong()).isEqualTo(record.getMillis());
        assertThat(json.path("thread").asText()).isEqualTo(Thread.currentThread().getName());
        assertThat(json.path("contextMap").path("tenant").asText()).isEqualTo("acme");
        assertThat(json.path("contextMap").path("code").asText()).isEqualTo("invalid_input");
        assertThat(json.path("thrown").path("name").asText()).isEqualTo("java.lang.IllegalStateException");
        assertThat(json.path("thrown").path("stackTrace").asText()).contains("LogLinesTest");
        assertThat(MDC.get("tenant")).isNull();
    }

    @Test
    void levelsAreNamedAsSlf4jNamesThem() {
        assertThat(LogLines.levelName(Level.SEVERE)).isEqualTo("ERROR");
        assertThat(LogLines.levelName(Level.WARNING)).isEqualTo("WARN");
        assertThat(LogLines.levelName(Level.INFO)).isEqualTo("INFO");
        assertThat(LogLines.levelName(Level.FINE)).isEqualTo("DEBUG");
        assertThat(LogLines.levelName(Level.FINEST)).isEqualTo("TRACE");
    }
}
