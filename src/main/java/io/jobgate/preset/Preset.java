package io.jobgate.preset;

import java.util.List;
import java.util.Map;

/**
 * An immutable, versioned server-side template with bounded inputs, the aspect classes it allows
 * (each an exact ratio, with a minimum size where needed) and what source upload it takes.
 *
 * @param kind            {@code image}, {@code transcription}, {@code video} or {@code summary} (a transcript's,
 *                        ordered by a transcription job, never sent by a client): selects providers and pricing
 * @param sourceMediaTypes media types a source upload may have; empty when the preset takes none
 * @param outputs          how many outputs one job produces (priced per output)
 * @param hints            what a provider is told beside the source (transcription), never the template
 */
public record Preset(String id, int version, String kind, String title, Map<String, AspectClass> aspectClasses,
                     Map<String, InputField> inputs, boolean sourceRequired, List<String> sourceMediaTypes,
                     List<String> outputMediaTypes, int outputs, PromptTemplate template, ProviderHints hints,
                     String fileSha256) {

    /** The kind of a call's summary: a chat model's answer about a transcription job's transcript. */
    public static final String SUMMARY = "summary";

    public boolean takesSource() {
        return !sourceMediaTypes.isEmpty();
    }
}
