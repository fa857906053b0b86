package io.jobgate.adapter;

import java.io.IOException;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;

/**
 * The plain text of a stored transcript, whichever transcription adapter wrote it: {@code text} (OpenAI's and
 * Azure OpenAI's json and verbose_json, Gemini's {@code {"text": ...}}) or Amazon Transcribe's
 * {@code results.transcripts[].transcript}.
 */
public final class TranscriptText {

    private TranscriptText() {
    }

    /** The transcript's text, or null when the bytes are no transcript this gateway's adapters write. */
    public static String of(byte[] json) {
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(json);
        } catch (IOException e) {
            return null;
        }
        if (root == null || !root.isObject()) {
            return null;
        }
        if (root.path("text").isTextual()) {
            return root.path("text").asText();
        }
        JsonNode transcripts = root.path("results").path("transcripts");
        if (transcripts.isArray() && !transcripts.isEmpty()) {
            StringBuilder text = new StringBuilder();
            for (JsonNode t : transcripts) {
                if (t.path("transcript").isTextual()) {
                    text.append(text.isEmpty() ? "" : "\n").append(t.path("transcript").asText());
                }
            }
            return text.toString();
        }
        return null;
    }

    /**
     * The tokens a prompt of this text takes, as the price reserves them before the provider counts: a token per
     * three characters, rounded up. Tokenizers make about four characters a token of English and fewer of other
     * languages; three errs on the side of the provider's count (the price is fixed when the summary is ordered).
     */
    public static long estimatedTokens(String text) {
        return text == null ? 0 : (text.length() + 2) / 3;
    }
}
