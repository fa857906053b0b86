package io.jobgate.preset;

import java.math.BigDecimal;
import java.util.Iterator;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;

/**
 * Checks a job's {@code inputs} against its preset: no unknown field, the declared type, every
 * cap. The first violation is refused as {@code invalid_input} naming the field's path.
 */
public final class InputValidator {

    private InputValidator() {
    }

    public static void validate(Preset preset, JsonNode inputs) {
        if (inputs == null || inputs.isMissingNode() || inputs.isNull()) {
            inputs = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode();
        }
        if (!inputs.isObject()) {
            throw ApiProblem.invalidInput("inputs", "'inputs' must be a JSON object of the preset's fields.");
        }
        validateObject(preset.inputs(), inputs, "inputs");
    }

    private static void validateObject(Map<String, InputField> fields, JsonNode object, String path) {
        Iterator<String> names = object.fieldNames();
        while (names.hasNext()) {
            String name = names.next();
            if (!fields.containsKey(name)) {
                throw ApiProblem.invalidInput(path + "." + name,
                        "Unknown field '" + name + "'; allowed: " + String.join(", ", fields.keySet()) + ".");
            }
        }
        for (InputField field : fields.values()) {
            JsonNode value = object.get(field.name());
            String at = path + "." + field.name();
            if (value == null || value.isNull()) {
                if (field.required()) {
                    throw ApiProblem.invalidInput(at, "Field '" + at + "' is required.");
                }
                continue;
            }
            validateValue(field, value, at);
        }
    }

    private static void validateValue(InputField field, JsonNode value, String at) {
        switch (field.type()) {
            case STRING -> {
                if (!value.isTextual()) {
                    throw wrongType(at, "a string");
                }
                String text = value.asText();
                if (text.codePointCount(0, text.length()) > field.maxLength()) {
                    throw ApiProblem.invalidInput(at, "Field '" + at + "' is longer than its cap of "
                            + field.maxLength() + " characters.");
                }
                if (field.pattern() != null && !field.pattern().matcher(text).matches()) {
                    throw ApiProblem.invalidInput(at, "Field '" + at + "' must match " + field.pattern() + ".");
                }
            }
            case ENUM -> {
                if (!value.isTextual() || !field.values().contains(value.asText())) {
                    throw ApiProblem.invalidInput(at, "Field '" + at + "' must be one of " + field.values() + ".");
                }
            }
            case BOOLEAN -> {
                if (!value.isBoolean()) {
                    throw wrongType(at, "true or false");
                }
            }
            case INTEGER -> {
                if (!value.isIntegralNumber()) {
                    throw wrongType(at, "a whole number");
                }
                if (!field.values().isEmpty() && !field.values().contains(value.asText())) {
                    throw ApiProblem.invalidInput(at, "Field '" + at + "' must be one of " + field.values() + ".");
                }
                checkRange(field, value.decimalValue(), at);
            }
            case NUMBER -> {
                if (!value.isNumber()) {
                    throw wrongType(at, "a number");
                }
                checkRange(field, value.decimalValue(), at);
            }
            case ARRAY -> {
                if (!value.isArray()) {
                    throw wrongType(at, "an array");
                }
                if (value.size() > field.maxItems()) {
                    throw ApiProblem.invalidInput(at, "Field '" + at + "' has " + value.size()
                            + " rows; its cap is " + field.maxItems() + ".");
                }
                for (int i = 0; i < value.size(); i++) {
                    JsonNode row = value.get(i);
                    String rowPath = at + "[" + i + "]";
                    if (!row.isObject()) {
                        throw wrongType(rowPath, "an object");
                    }
                    validateObject(field.rowFields(), row, rowPath);
                }
            }
            default -> throw new IllegalStateException("unhandled type " + field.type());
        }
    }

    private static void checkRange(InputField field, BigDecimal number, String at) {
        if (field.min() != null && number.compareTo(field.min()) < 0
                || field.max() != null && number.compareTo(field.max()) > 0) {
            throw ApiProblem.invalidInput(at, "Field '" + at + "' must be between " + field.min() + " and " + field.max() + ".");
        }
    }

    private static ApiProblem wrongType(String at, String expected) {
        return ApiProblem.invalidInput(at, "Field '" + at + "' must be " + expected + ".");
    }
}
