package io.jobgate;

import java.util.Arrays;

import io.jobgate.bench.Bench;
import org.apache.camel.main.Main;

/**
 * One binary, several commands: {@code run} (default) starts the gateway, {@code bench} measures it.
 */
public final class App {

    /** Settings file of the gateway; every entry can be overridden by environment variable. */
    public static final String SETTINGS = "file:config/application.properties";

    private App() {
    }

    public static void main(String[] args) throws Exception {
        String command = args.length == 0 || args[0].startsWith("-") ? "run" : args[0];
        String[] rest = args.length == 0 || args[0].startsWith("-") ? args : Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "run" -> runGateway(rest);
            case "bench" -> Bench.main(rest);
            default -> {
                System.err.println("usage: java -jar jobgate.jar [run|bench] [options]");
                System.exit(2);
            }
        }
    }

    static void runGateway(String[] args) throws Exception {
        // Main scans this package for the CamelConfiguration that wires the parts.
        Main main = new Main(App.class);
        main.setPropertyPlaceholderLocations(SETTINGS);
        main.run(args);
    }
}
