package io.jobgate.simulator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.common.Json;

/** A simple, deterministic transcript for an audio source: speaker turns over its duration. */
final class Transcripts {

    private static final String[] LINES = {"Hello, thanks for calling.", "I have a question about my invoice.",
        "Of course, what is the invoice number?", "It is the one from last month.", "Let me look that up for you."};

    private Transcripts() {
    }

    /** @param audioBytes size of the source; 16 kB a second of 8 kHz 16-bit mono, as the samples use */
    static byte[] render(String language, int speakers, long audioBytes) {
        double seconds = Math.max(1, audioBytes / 16_000.0);
        List<Map<String, Object>> segments = new ArrayList<>();
        double step = seconds / LINES.length;
        for (int i = 0; i < LINES.length; i++) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("speaker", "S" + (i % Math.max(1, speakers) + 1));
            s.put("start", Math.round(i * step * 100) / 100.0);
            s.put("end", Math.round((i + 1) * step * 100) / 100.0);
            s.put("text", LINES[i]);
            segments.add(s);
        }
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("language", language);
        t.put("duration_seconds", Math.round(seconds * 100) / 100.0);
        t.put("text", String.join(" ", LINES));
        t.put("segments", segments);
        return Json.write(t).getBytes(StandardCharsets.UTF_8);
    }

    /** A deterministic summary of a transcript of {@code transcriptBytes}, as a chat model's answer is stored. */
    static byte[] summary(String focus, long transcriptBytes) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("text", "The customer asks about last month's invoice; the agent looks it up. Next step: send the invoice copy."
                + " (Simulated summary, focus " + focus + ", of a " + transcriptBytes + "-byte transcript.)");
        return Json.write(t).getBytes(StandardCharsets.UTF_8);
    }
}
