package io.jobgate.simulator;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import io.jobgate.infra.Settings;

/**
 * {@code java -jar jobgate.jar simulator [--port N]}: the provider simulator on its own, with the
 * {@code jobgate.simulator.*} settings of config/application.properties (environment variables
 * override them), until stopped.
 */
public final class SimulatorCommand {

    private SimulatorCommand() {
    }

    public static void main(String[] args) throws Exception {
        Properties file = new Properties();
        Path settings = Path.of("config/application.properties");
        if (Files.exists(settings)) {
            try (Reader reader = Files.newBufferedReader(settings)) {
                file.load(reader);
            }
        }
        int port = Integer.parseInt(setting(file, "jobgate.simulator.port", "8090"));
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--port")) {
                port = Integer.parseInt(args[i + 1]);
            } else {
                throw new IllegalArgumentException("usage: simulator [--port N]");
            }
        }
        ProviderSimulator simulator = ProviderSimulator.start(new ProviderSimulator.Config(port,
                Duration.ofMillis(Long.parseLong(setting(file, "jobgate.simulator.processing-ms", "300"))),
                Duration.ofMillis(Long.parseLong(setting(file, "jobgate.simulator.slow-ms", "6000"))),
                setting(file, "jobgate.simulator.webhook-secret", ""),
                ProviderSimulator.rates(setting(file, "jobgate.simulator.faults", ""))));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            simulator.close();
            stopped.countDown();
        }));
        System.out.println("provider simulator listening on http://127.0.0.1:" + simulator.port() + " (Ctrl-C stops it)");
        stopped.await();
    }

    private static String setting(Properties file, String key, String fallback) throws IOException {
        String env = System.getenv(Settings.environmentName(key));
        String value = env != null ? env : System.getProperty(key, file.getProperty(key, fallback));
        return value == null ? fallback : value.trim();
    }
}
