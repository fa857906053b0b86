package io.jobgate.ops;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;

/**
 * One gauge name with a series per tag set, whose values a refresh replaces as a whole: each tag set's
 * gauge is registered once and never removed, and reads its value from the latest snapshot. Not
 * Micrometer's {@code MultiGauge}: its overwrite removes and re-adds every row's gauge, and a Prometheus
 * scrape iterating meanwhile can see a row's old gauge and its new one and fail the whole scrape with
 * "Duplicate labels" (micrometer#6851, unfixed in the 1.15.6 Camel brings). Registering only new tag
 * sets never puts a second gauge beside one that a scrape may already have read.
 */
final class SnapshotGauges {

    private final String name;
    private final String description;
    private final double absent;
    private final MeterRegistry registry;
    private final Set<Tags> registered = ConcurrentHashMap.newKeySet();
    private volatile Map<Tags, Double> values = Map.of();

    /**
     * @param absent what a tag set missing from the latest snapshot reports (a tenant or provider no
     *               longer seen): the value a refresh would give it with no rows, so it neither vanishes
     *               nor says something false (no open jobs, no leases, a gate not closed)
     */
    SnapshotGauges(String name, String description, double absent, MeterRegistry registry) {
        this.name = name;
        this.description = description;
        this.absent = absent;
        this.registry = registry;
    }

    /** The values of this refresh, one per tag set; called by one thread at a time (the refresh). */
    void publish(Map<Tags, Double> snapshot) {
        values = Map.copyOf(snapshot); // swapped whole: a gauge reads the old value or the new one
        for (Tags tags : snapshot.keySet()) {
            if (registered.add(tags)) {
                // Strong reference: the registry holds gauges weakly by default, and only it holds this lambda.
                Gauge.builder(name, () -> value(tags)).tags(tags).description(description).strongReference(true)
                        .register(registry);
            }
        }
    }

    private double value(Tags tags) {
        return values.getOrDefault(tags, absent);
    }
}
