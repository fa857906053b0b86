package io.jobgate.output;

import io.jobgate.preset.PresetCatalog;
import org.apache.camel.CamelContext;
import software.amazon.awssdk.services.s3.S3Client;

/** The wiring of output: the store that takes an attempt's output through quarantine, its checks and promotion. */
public final class OutputWiring {

    private OutputWiring() {
    }

    /**
     * @param maxBytes         the largest output accepted
     * @param inMemoryMaxBytes outputs up to this size are checked in memory and written once; bigger ones go through quarantine
     */
    public static OutputStore bind(CamelContext context, S3Client s3, String bucket, long maxBytes, long inMemoryMaxBytes,
                                   PresetCatalog presets) {
        OutputStore outputs = new OutputStore(context.createProducerTemplate(), bucket, maxBytes, inMemoryMaxBytes, presets, s3);
        context.getRegistry().bind("outputStore", outputs);
        return outputs;
    }
}
