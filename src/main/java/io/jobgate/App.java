package io.jobgate;

import java.util.Arrays;

import io.jobgate.bench.Bench;

/**
 * One binary, several commands: {@code run} (default) starts the gateway, {@code bench} measures it,
 * {@code simulator} runs the bundled provider on its own, {@code demo} drives a running gateway.
 * The commands depend on the gateway ({@link Gateway}), never the other way round.
 */
public final class App {

    private App() {
    }

    public static void main(String[] args) throws Exception {
        String command = args.length == 0 || args[0].startsWith("-") ? "run" : args[0];
        String[] rest = args.length == 0 || args[0].startsWith("-") ? args : Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "run" -> Gateway.gateway().run(rest);
            case "bench" -> Bench.main(rest);
            case "simulator" -> io.jobgate.simulator.SimulatorCommand.main(rest);
            case "demo" -> io.jobgate.demo.Demo.main(rest);
            default -> {
                System.err.println("usage: java -jar jobgate.jar [run|bench|simulator|demo] [options]");
                System.exit(2);
            }
        }
    }
}
