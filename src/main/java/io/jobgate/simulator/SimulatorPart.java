package io.jobgate.simulator;

import java.util.Map;

import io.jobgate.infra.BackgroundStart;
import io.jobgate.infra.Settings;
import io.jobgate.infra.SidePart;

/**
 * The bundled provider simulator as a side part of the gateway ({@code jobgate.simulator.enabled}):
 * started beside it, its URL handed to the simulator adapter's settings.
 */
public final class SimulatorPart implements SidePart {

    @Override
    public String name() {
        return "provider-simulator";
    }

    @Override
    public BackgroundStart<Running> start(Settings settings) {
        if (!settings.bool("jobgate.simulator.enabled")) {
            return null;
        }
        ProviderSimulator.Config config = config(settings);
        return BackgroundStart.of("simulator", () -> {
            ProviderSimulator simulator = ProviderSimulator.start(config);
            return new Running() {
                @Override
                public Map<String, String> overrides() {
                    // Port 0 picks a free port; the simulator adapter's base URL follows the real one.
                    return Map.of("jobgate.simulator.url", "http://127.0.0.1:" + simulator.port());
                }

                @Override
                public void close() {
                    simulator.close();
                }
            };
        });
    }

    /** Settings of the bundled provider simulator ({@code jobgate.simulator.*}). */
    public static ProviderSimulator.Config config(Settings settings) {
        return new ProviderSimulator.Config(settings.intValue("jobgate.simulator.port", 0, 65535),
                settings.millis("jobgate.simulator.processing-ms", 0, 600_000),
                settings.millis("jobgate.simulator.slow-ms", 0, 600_000),
                settings.required("jobgate.simulator.webhook-secret"),
                ProviderSimulator.rates(settings.optional("jobgate.simulator.faults").orElse("")));
    }
}
