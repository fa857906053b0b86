package io.jobgate;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;


/**
 * One binary, several commands: {@code run} (default) starts the gateway,
 * {@code simulator} runs the bundled provider on its own, {@code demo} drives a running gateway, {@code evaluate} prints what its evaluator read back, {@code hawtio} serves the console on one.
 * {@code help} (or {@code --help}) lists them; {@code <command> --help} describes one without
 * running it. The commands depend on the gateway ({@link Gateway}), never the other way round.
 */
public final class App {

    /** A command: its name, one line on what it does, and its usage. */
    record Command(String name, String summary, String usage) {
    }

    static {
        // First of all: the commands' classes make loggers, and the first logger starts JUL.
        io.jobgate.common.LogSetup.use();
    }

    static final List<Command> COMMANDS = List.of(
            new Command("run", "start the gateway (the default): API on camel.server.port, embedded parts unless configured",
                    """
                    usage: java -jar jobgate.jar [run]
                      Starts the gateway with config/application.properties; every setting can be given as an
                      environment variable (jobgate.db.url -> JOBGATE_DB_URL). Every setting: docs/settings.md."""),
            new Command("broker", "run the embedded broker as a node of its own, alone or one of a replicated pair (no gateway parts)",
                    """
                    usage: java -jar jobgate.jar broker
                      Starts artemis/broker.xml's broker alone on jobgate.broker.embedded-host/-port, for gateways that
                      name it in jobgate.broker.url. Needs JOBGATE_BROKER_USER and JOBGATE_BROKER_PASSWORD (the gateway's
                      login; no default) and tenants files without the demo producers. With JOBGATE_BROKER_HA=primary|backup
                      it is one of a replicated pair: JOBGATE_BROKER_HA_PEER (the other node's host:port),
                      JOBGATE_BROKER_HA_CLUSTER_PASSWORD (the same on both), JOBGATE_BROKER_HA_ADDRESS (this node's
                      host:port as the peer and clients reach it; default embedded-host:embedded-port).
                      docs/operating.md, "Artemis: a replicated pair"."""),
            new Command("demo", "drive a running gateway: a mixed batch of two tenants with faults, live progress, a summary",
                    """
                    usage: java -jar jobgate.jar demo [--url http://localhost:8080] [--jobs 10]
                      --jobs is per tenant. Needs a gateway running with its simulator (the default start)."""),
            new Command("send-job", "send one job over the JMS intake as a tenant's broker user and print the reply",
                    """
                    usage: java -jar jobgate.jar send-job [--url tcp://127.0.0.1:61616] [--user globex-legacy]
                                 [--password dev-globex-jms] [--key IDEMPOTENCY-KEY] [--correlation-id ID]
                                 [--file job.json | --json '{...}'] [--timeout-ms 10000]
                      Sends the job request (default: a demo invoice) to jobs.intake over Artemis' core protocol and
                      prints the reply as one JSON line: status, job_id, replayed, body. docs/jms.md."""),
            new Command("simulator", "run the bundled provider simulator on its own",
                    """
                    usage: java -jar jobgate.jar simulator [--port 8090]
                      The offline provider (Replicate-shaped predictions API, signed webhooks); its processing time,
                      slowness and fault rates come from jobgate.simulator.* in config/application.properties."""),
            new Command("hawtio", "start the Hawtio console (embedded Jetty) on a running gateway's routes, offline",
                    """
                    usage: java -jar jobgate.jar hawtio [--port 8081] [--host 127.0.0.1] [--gateway http://127.0.0.1:8080]
                      Serves Hawtio at http://<host>:<port>/hawtio/, already showing the gateway's routes, MBeans and
                      route diagrams through its Jolokia (<gateway>/observe/jolokia). A gateway on another host needs
                      the admin key: set JOBGATE_ADMIN_API_KEY. Anyone who reaches the console acts as that operator,
                      so it listens on loopback unless --host says otherwise. docs/hawtio.md."""),
            new Command("evaluate", "print what a running gateway's evaluator read back: a table per preset and revision",
                    """
                    usage: java -jar jobgate.jar evaluate [--since 2026-12-01 | --since 2026-12-01T10:00:00Z]
                                 [--url http://127.0.0.1:8080] [--admin-key KEY]
                      Per preset and revision since then (default: the last 24 hours): jobs, field accuracy, outputs
                      whose totals read right, rejected outputs. Admin key: --admin-key or JOBGATE_ADMIN_API_KEY.
                      Needs jobgate.evaluation.enabled on the gateway. docs/evaluation.md."""),
            new Command("training-run", "start the gateway on a throwaway data directory and stop it once ready (the build's class-data archive)",
                    """
                    usage: java -jar jobgate.jar training-run
                      What mvn package runs after the jar is made, under -XX:ArchiveClassesAtExit=target/jobgate.jsa:
                      the classes the start loads go to the archive that the README's run command maps at every
                      later start. Ephemeral ports; the data directory is deleted afterwards."""),
            new Command("help", "list the commands; '<command> --help' describes one",
                    "usage: java -jar jobgate.jar help | --help | <command> --help"));

    private static final Set<String> HELP = Set.of("help", "--help", "-h");

    private App() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && HELP.contains(args[0])) {
            System.out.print(overview());
            return;
        }
        String command = args.length == 0 || args[0].startsWith("-") ? "run" : args[0];
        String[] rest = args.length == 0 || args[0].startsWith("-") ? args : Arrays.copyOfRange(args, 1, args.length);
        if (Arrays.stream(rest).anyMatch(HELP::contains)) {
            Optional<Command> known = find(command);
            if (known.isPresent()) {
                System.out.println(known.get().usage());
                return;
            }
        }
        switch (command) {
            case "run" -> refusable(() -> Gateway.gateway().run(rest));
            case "broker" -> refusable(() -> BrokerNode.main(rest));
            case "bench" -> {
                // The bench is not in the gateway's jar (src/bench, docs/benchmarks.md).
                System.err.println("the bench is its own jar: java -jar target/jobgate-bench.jar [options] (docs/benchmarks.md)");
                System.exit(2);
            }
            case "training-run" -> io.jobgate.ops.TrainingRun.main(rest);
            case "simulator" -> io.jobgate.simulator.SimulatorCommand.main(rest);
            case "demo" -> io.jobgate.demo.Demo.main(rest);
            case "evaluate" -> io.jobgate.evaluation.EvaluateCommand.main(rest);
            case "send-job" -> io.jobgate.demo.SendJob.main(rest);
            // By name only here: Jetty and the war load when this command runs, never on the gateway's start.
            case "hawtio" -> io.jobgate.hawtio.HawtioCommand.main(rest);
            default -> {
                PrintStream err = System.err;
                err.println("unknown command '" + command + "'");
                err.print(overview());
                System.exit(2);
            }
        }
    }

    /**
     * Starts the gateway or a broker node. A refusal ({@link io.jobgate.common.StartRefused}: demo credentials on a
     * reachable address, a configured port in use, a broker node without a login of its own) is the operator's to
     * act on: one line on stderr, the stack at debug level (FINE), exit status 2.
     */
    private static void refusable(Start start) throws Exception {
        try {
            start.run();
        } catch (Exception e) {
            Optional<io.jobgate.common.StartRefused> refused = io.jobgate.common.StartRefused.in(e);
            if (refused.isEmpty()) {
                throw e;
            }
            java.util.logging.Logger.getLogger(App.class.getName()).log(java.util.logging.Level.FINE, "start refused", e);
            System.err.println("jobgate: " + refused.get().getMessage());
            System.exit(2);
        }
    }

    private interface Start {
        void run() throws Exception;
    }

    static Optional<Command> find(String name) {
        return COMMANDS.stream().filter(c -> c.name().equals(name)).findFirst();
    }

    /** The commands, one line each. */
    static String overview() {
        StringBuilder out = new StringBuilder("usage: java -jar jobgate.jar [command] [options]\n\ncommands:\n");
        COMMANDS.forEach(c -> out.append(String.format("  %-10s %s%n", c.name(), c.summary())));
        out.append("\n'java -jar jobgate.jar <command> --help' describes one without running it.\n");
        return out.toString();
    }
}
