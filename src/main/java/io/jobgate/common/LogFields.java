package io.jobgate.common;

import java.util.ArrayList;
import java.util.List;

import org.slf4j.MDC;

/**
 * Fields of one structured log line, set for the duration of the logging call: the text format
 * shows them in the message, the JSON format ({@code JOBGATE_LOG_FORMAT=json}) as members of the
 * line. Only ids, codes, versions and figures go here — never prompts or user text.
 */
public final class LogFields implements AutoCloseable {

    private final List<String> keys = new ArrayList<>();

    private LogFields() {
    }

    /** Alternating keys and values; null values are left out. */
    public static LogFields of(String... keysAndValues) {
        LogFields fields = new LogFields();
        for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
            if (keysAndValues[i + 1] != null) {
                MDC.put(keysAndValues[i], keysAndValues[i + 1]);
                fields.keys.add(keysAndValues[i]);
            }
        }
        return fields;
    }

    @Override
    public void close() {
        keys.forEach(MDC::remove);
    }
}
