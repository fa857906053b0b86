package io.jobgate.preset;

import java.util.List;
import java.util.Map;

/**
 * One declared input of a preset. Every field has a hard cap: {@code maxLength} for strings,
 * {@code min}/{@code max} for numbers, {@code maxItems} for arrays (whose rows are objects of
 * further fields). User text only ever fills these fields, never the template itself.
 */
public record InputField(String name, Type type, boolean required, int maxLength, java.util.regex.Pattern pattern,
                         List<String> values, java.math.BigDecimal min, java.math.BigDecimal max,
                         int maxItems, Map<String, InputField> rowFields) {

    public enum Type {
        STRING, INTEGER, NUMBER, BOOLEAN, ENUM, ARRAY;

        public static Type parse(String value) {
            return Type.valueOf(value.trim().toUpperCase());
        }
    }
}
