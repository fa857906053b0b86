package io.jobgate.video;

import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.jobgate.infra.Settings;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.preset.VideoOrder;
import io.jobgate.provider.Pricing;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cost of a video job is the adapter's price table: price of a second at the resolution x the
 * ordered seconds x the outputs, for every cell of the table; metered as video_seconds.
 */
class VideoPricingTest {

    static ProviderCatalog providers() throws Exception {
        DefaultCamelContext context = new DefaultCamelContext();
        Properties settings = new Properties();
        try (var in = java.nio.file.Files.newBufferedReader(Path.of("config/application.properties"))) {
            settings.load(in); // the simulator's file names its settings
        }
        context.getPropertiesComponent().setInitialProperties(settings);
        return ProviderCatalog.load(List.of(Path.of("config/providers")), new Settings(context));
    }

    static Preset withOutputs(Preset p, int outputs) {
        return new Preset(p.id(), p.version(), p.kind(), p.title(), p.aspectClasses(), p.inputs(), p.sourceRequired(),
                p.sourceMediaTypes(), p.outputMediaTypes(), outputs, p.template(), p.hints(), p.fileSha256());
    }

    @Test
    void everyDurationResolutionAndOutputCountIsPricedFromTheAdaptersTable() throws Exception {
        Preset clip = PresetCatalog.load(Path.of("config/presets")).resolve("invoice-clip", 1);
        Provider fal = providers().find("fal").orElseThrow();
        assertThat(clip.inputs().get("duration_seconds").values()).containsExactly("4", "6", "8");
        int cells = 0;
        for (String seconds : clip.inputs().get("duration_seconds").values()) {
            for (String resolution : List.of("720p", "1080p")) {
                for (int outputs = 1; outputs <= 3; outputs++) {
                    Preset preset = withOutputs(clip, outputs);
                    ObjectNode inputs = JsonNodeFactory.instance.objectNode()
                            .put("duration_seconds", Integer.parseInt(seconds)).put("resolution", resolution);
                    VideoOrder order = VideoOrder.of(preset, inputs);
                    long perSecond = Long.parseLong(fal.settings().get("price.video-second-micros." + resolution));
                    assertThat(Pricing.costMicros(preset, fal, null, order)).as(seconds + " s " + resolution + " x" + outputs)
                            .isEqualTo(perSecond * Integer.parseInt(seconds) * outputs);
                    assertThat(Pricing.metered(preset, null, order))
                            .isEqualTo(new Pricing.Usage((long) Integer.parseInt(seconds) * outputs, "video_seconds"));
                    cells++;
                }
            }
        }
        assertThat(cells).isEqualTo(18);
    }

    @Test
    void aResolutionPricedDifferentlyCostsDifferently() throws Exception {
        Preset clip = PresetCatalog.load(Path.of("config/presets")).resolve("invoice-clip", 1);
        Provider sim = providers().find("simulator").orElseThrow();
        ObjectNode hd = JsonNodeFactory.instance.objectNode().put("duration_seconds", 6).put("resolution", "720p");
        ObjectNode fullHd = JsonNodeFactory.instance.objectNode().put("duration_seconds", 6).put("resolution", "1080p");
        assertThat(Pricing.costMicros(clip, sim, null, VideoOrder.of(clip, fullHd)))
                .isGreaterThan(Pricing.costMicros(clip, sim, null, VideoOrder.of(clip, hd)));
    }
}
