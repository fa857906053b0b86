package io.jobgate.preset;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * What a transcription provider is told beside the audio: the audio's language and a short
 * vocabulary hint, both from the job's inputs, never the instruction template (whisper takes its
 * {@code prompt} as a hint of vocabulary and style in the audio's language, not as instructions).
 * Declared in a preset's {@code hints}; without it, an input named {@code language} is the language.
 *
 * @param languageField   the input holding the ISO-639-1 language, or null
 * @param vocabularyField the input whose terms make the hint (a string, or an array of rows whose
 *                        first text member is the term), or null
 * @param vocabularyMaxChars the hint's cap in characters: whole terms only, never one cut in half
 */
public record ProviderHints(String languageField, String vocabularyField, int vocabularyMaxChars) {

    /**
     * The largest cap a preset may declare: whisper counts only the last 224 tokens of its prompt,
     * and a token is at least one character, so 224 characters always fit.
     */
    public static final int MAX_VOCABULARY_CHARS = 224;

    public static final ProviderHints NONE = new ProviderHints(null, null, 0);

    /** The job's language, or null. */
    public String language(JsonNode inputs) {
        if (languageField == null) {
            return null;
        }
        JsonNode value = inputs.path(languageField);
        return value.isTextual() && !value.asText().isBlank() ? value.asText() : null;
    }

    /** The vocabulary hint, terms joined by {@code ", "} up to the cap, or null when there is none. */
    public String vocabulary(JsonNode inputs) {
        if (vocabularyField == null) {
            return null;
        }
        JsonNode value = inputs.path(vocabularyField);
        StringBuilder hint = new StringBuilder();
        Iterable<JsonNode> terms = value.isArray() ? value : java.util.List.of(value);
        for (JsonNode row : terms) {
            String term = term(row);
            if (term == null) {
                continue;
            }
            int length = hint.length() + (hint.length() == 0 ? 0 : 2) + term.length();
            if (length > vocabularyMaxChars) {
                break;
            }
            hint.append(hint.length() == 0 ? "" : ", ").append(term);
        }
        return hint.length() == 0 ? null : hint.toString();
    }

    private static String term(JsonNode row) {
        if (row.isTextual() || row.isNumber()) {
            String text = row.asText().strip();
            return text.isEmpty() ? null : text;
        }
        if (row.isObject()) {
            var values = row.elements();
            while (values.hasNext()) {
                String text = term(values.next());
                if (text != null) {
                    return text;
                }
            }
        }
        return null;
    }
}
