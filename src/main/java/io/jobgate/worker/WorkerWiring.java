package io.jobgate.worker;

import io.jobgate.job.JobLeases;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import io.jobgate.adapter.AdapterHttpPool;
import io.jobgate.adapter.AdapterWiring;
import io.jobgate.adapter.Backoff;
import io.jobgate.adapter.JsonParts;
import io.jobgate.canary.Canaries;
import io.jobgate.infra.InfraWiring;
import io.jobgate.infra.InstanceLiveness;
import io.jobgate.infra.ManagedResource;
import io.jobgate.infra.Roles;
import io.jobgate.infra.Settings;
import io.jobgate.job.JobWiring;
import io.jobgate.ops.Meters;
import io.jobgate.output.OutputStore;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.Provider;
import io.jobgate.pool.PoolPlacer;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.relay.RelayWiring;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The wiring of worker: leases, the worker route's steps and the recording of their outcomes, the sweeper and
 * retention, the provider calls in flight and the answers waiting to be finished; and the order a clean stop
 * takes them down in.
 */
public final class WorkerWiring {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerWiring.class);

    private WorkerWiring() {
    }

    /**
     * @param backoff     the one backoff the worker shares with the reconciler
     * @param firstCheck  when the reconciler first checks a job waiting on its provider
     * @param otherOwners the owners of leases and claims beside the worker's (the reconciler's, the relay's): each taken
     *                    over at the next sweep if this instance dies
     */
    public static void bind(CamelContext context, Settings settings, Roles roles, Path dataDir, InfraWiring.Stores stores, Clock clock,
                            WorkerSettings workerSettings, Backoff backoff, ProviderCatalog providers, PresetCatalog presets,
                            JobWiring.Jobs jobs, Canaries canaries, AdapterWiring.Routes adapterRoutes, AdapterWiring.Calls adapters,
                            OutputStore outputs, Meters meters, RelayWiring.Relay relay, Duration firstCheck,
                            List<String> otherOwners, PoolPlacer pools) throws Exception {
        Registry registry = context.getRegistry();
        JdbcTemplate jdbc = stores.jdbc();
        JobLeases leases = jobs.leases();
        // Answered calls' slots go back early in batches, one statement (and one wake of the relay) each (step end-call).
        CallEnds callEnds = new CallEnds(leases::endCalls, relay.wakeup()::wake);
        context.addService(ManagedResource.startedAndStoppedBy("call-ends", callEnds::start, callEnds::close), true, true);
        registry.bind("callEnds", callEnds);
        Sweeper sweeper = new Sweeper(jdbc, leases, jobs.finalizer(), providers, clock, SweeperSettings.from(settings), stores.s3(),
                stores.bucket());
        registry.bind("sweeper", sweeper);
        registry.bind("retention", new Retention(jdbc, clock,
                Duration.ofHours(settings.intValue("jobgate.retention.outbox-hours", 1, 24 * 3650)),
                Duration.ofHours(settings.intValue("jobgate.retention.webhook-receipts-hours", 1, 24 * 3650)),
                settings.seconds("jobgate.webhooks.tolerance-seconds", 1, 86_400),
                Duration.ofHours(settings.intValue("jobgate.retention.webhook-deliveries-hours", 1, 24 * 3650)),
                settings.intValue("jobgate.retention.batch", 1, 100_000)));
        PoolMoves moves = new PoolMoves(pools, presets, clock, meters);
        AttemptStarts starts = new AttemptStarts(leases, canaries, clock, moves);
        registry.bind("attemptStarts", starts);
        Worker worker = new Worker(workerSettings, leases, starts, presets, providers, stores.s3(), stores.bucket(), outputs, backoff);
        registry.bind("worker", worker);
        registry.bind("outcomeRecorder", new OutcomeRecorder(leases, outputs,
                new AttemptDecisions(leases, canaries, clock, backoff, firstCheck, moves),
                meters, adapters.cancel()));
        // The worker's name is the lease owner in the jobs table: logged to tell instances apart there.
        LOG.info("jobgate roles: {}{}", roles, roles.runs(Roles.Role.WORKER) ? "; workers lease jobs as " + worker.name() : "");
        // Where calls wait on their provider (routes/worker.camel.yaml, hand-off-call): no JMS transaction,
        // no consumer, and on Java 21+ no platform thread per call.
        ProviderCalls providerCalls = ProviderCalls.create(
                settings.intValue("jobgate.worker.finish-concurrency", 1, 1000),
                providers.all().stream().mapToInt(Provider::maxConcurrency).sum(),
                settings.intValue("jobgate.worker.concurrency", 1, 10000),
                settings.optional("jobgate.worker.max-calls").isPresent()
                        ? settings.intValue("jobgate.worker.max-calls", 1, 1_000_000) : 0);
        registry.bind("providerCalls", providerCalls);
        AnswersInMemory answersInMemory = AnswersInMemory.open(dataDir.resolve("answers-waiting"),
                settings.optional("jobgate.worker.answers-in-memory-max-bytes").isPresent()
                        ? settings.longValue("jobgate.worker.answers-in-memory-max-bytes", 0, Long.MAX_VALUE)
                        : AnswersInMemory.defaultBudget());
        registry.bind("answersInMemory", answersInMemory);
        // Adapters' decoded outputs (OpenAI's images) count against the same budget as the answers waiting to be finished:
        // bound here, where that budget is made (adapter may not use worker).
        registry.bind("jsonParts", new JsonParts(answersInMemory));
        meters.answersInMemory(answersInMemory::heldBytes, answersInMemory::onDiskBytes, answersInMemory::setAsideTotal);
        Map<String, Integer> capacity = new TreeMap<>();
        providers.all().forEach(p -> capacity.put(p.name(), p.maxConcurrency()));
        meters.providerCalls(providerCalls::inFlight, providerCalls::peak, providerCalls::handedOff, providerCalls::waitingToFinish,
                capacity, providerCalls.maxCalls(), providerCalls::startsHeldAtCap);
        if (roles.runs(Roles.Role.WORKER)) {
            AdapterHttpPool.Size pool = adapterRoutes.pool();
            LOG.info("provider calls: up to {} in flight ({}; each provider's max-concurrency, over all instances){}, carried on {}; "
                    + "HTTP pool {} connections per host, {} in all{}; dispatch window {}", pool.callsAllowed(),
                    capacity.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                            .collect(Collectors.joining(", ")),
                    providerCalls.maxCalls() > 0 ? ", this instance " + providerCalls.maxCalls() + " at once (jobgate.worker.max-calls)" : "",
                    providerCalls.carrier(), pool.perRoute(), pool.total(),
                    pool.operatorSet() ? " (camel.component.http.* as set)" : "", relay.settings().maxRunning());
            if (pool.perRoute() < pool.callsAllowed()) {
                LOG.warn("camel.component.http.connections-per-route {} is below the {} calls the providers allow: calls beyond it "
                        + "wait for a connection inside the HTTP client", pool.perRoute(), pool.callsAllowed());
            }
        }
        // Alive while this process lives (a lock PostgreSQL drops with the process): if it dies, the
        // leases and claims below are taken over at the next sweep instead of when they run out.
        // Taken when the context starts, before the routes that lease and claim.
        List<String> owners = new ArrayList<>(List.of(worker.name()));
        owners.addAll(otherOwners);
        var liveness = new AtomicReference<InstanceLiveness>();
        context.addService(ManagedResource.startedAndStoppedBy("instance-liveness", () -> {
            liveness.set(InstanceLiveness.start(stores.dataSource()));
            for (String owner : owners) {
                liveness.get().register(owner);
                sweeper.runsHere(owner);
            }
        }, () -> {
            if (liveness.get() != null) {
                liveness.get().close();
            }
        }), true, true);
        // On a clean stop, after the routes (services stop in reverse order, before the pools): the
        // leases this worker still holds go back at once instead of running out.
        context.addService(ManagedResource.stoppedBy("lease-hand-back", () -> sweeper.handBack(worker.name())), true, true);
        // Before that hand-back (added after it, so stopped before it): the route provider-call already had
        // the shutdown timeout for its calls in flight (it stops last, shutdownRoute Defer); a few seconds
        // more for those recording their outcome, so a stop stays within the timeout plus these.
        context.addService(ManagedResource.stoppedBy("provider-calls-drain",
                () -> providerCalls.drain(Duration.ofSeconds(5))), true, true);
    }
}
