package io.jobgate.infra;

import java.util.Arrays;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.builder.RouteBuilderLifecycleStrategy;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.model.rest.RestDefinition;

/**
 * Which routes start on this instance, decided where Camel reads each route file (also a file reloaded
 * while the gateway runs), so the route files stay plain YAML DSL: valid against the DSL's schema, which
 * wants {@code autoStartup} and {@code disabled} as booleans, never as {@code {{placeholders}}}.
 * Camel calls this for every route builder found in the registry ({@link RouteBuilderLifecycleStrategy}),
 * after the file is read and before its routes and REST services are built; what it sets is what a
 * literal {@code autoStartup: false} or {@code disabled: true} in the file would have set.
 *
 * <ul>
 *   <li>A route's {@code group} names the role it belongs to ({@code api}, {@code relay}, {@code worker},
 *       {@code sweeper}, {@code reconciler}): on an instance without that role it is built but not
 *       started. {@code group: evaluation}: started where workers run and {@code jobgate.evaluation.enabled}
 *       is true. A route without a group runs everywhere; any other group stops the start (a typo would
 *       otherwise run a role's route on every instance).</li>
 *   <li>A provider's adapter route (consuming {@code direct:provider-<name>}) is not started while
 *       {@code jobgate.provider.<name>.enabled} is false (unset: started, as for every provider that has
 *       no such switch).</li>
 *   <li>The REST DSL is the role {@code api}: elsewhere it is disabled, so {@code /v1} is not served at
 *       all while {@code /observe} stays on the same port.</li>
 * </ul>
 *
 * A route the file itself leaves unstarted ({@code autoStartup: false}) stays so: these rules only ever
 * hold a route back.
 */
public final class RouteStartRules implements RouteBuilderLifecycleStrategy {

    /** The group of the evaluation route: more than a role, it also needs its switch. */
    public static final String EVALUATION = "evaluation";

    private static final String ADAPTER_PREFIX = "provider-";

    private final Roles roles;
    private final boolean evaluationRuns;
    /** A setting's value, if set: read when a file is read, as a placeholder in it would have been. */
    private final Function<String, Optional<String>> setting;

    public RouteStartRules(Roles roles, boolean evaluationEnabled, Function<String, Optional<String>> setting) {
        this.roles = roles;
        this.evaluationRuns = roles.runs(Roles.Role.WORKER) && evaluationEnabled;
        this.setting = setting;
    }

    @Override
    public void afterConfigure(RouteBuilder builder) {
        if (!roles.runs(Roles.Role.API)) {
            for (RestDefinition rest : builder.getRestCollection().getRests()) {
                rest.setDisabled("true");
            }
        }
        for (RouteDefinition route : builder.getRouteCollection().getRoutes()) {
            if (!starts(route)) {
                route.setAutoStartup("false");
            }
        }
    }

    /** Whether this instance starts {@code route} (before what the file itself says of it). */
    boolean starts(RouteDefinition route) {
        return groupRunsHere(route) && adapterEnabled(route);
    }

    private boolean groupRunsHere(RouteDefinition route) {
        String group = route.getGroup();
        if (group == null || group.isBlank()) {
            return true;
        }
        if (EVALUATION.equals(group)) {
            return evaluationRuns;
        }
        Roles.Role role = Arrays.stream(Roles.Role.values()).filter(r -> r.wire().equals(group)).findFirst()
                .orElseThrow(() -> new IllegalStateException("route " + route.getRouteId() + " names the group '" + group
                        + "', which is no role: a route's group is the role it runs with ("
                        + Stream.concat(Arrays.stream(Roles.Role.values()).map(Roles.Role::wire), Stream.of(EVALUATION))
                                .collect(Collectors.joining(", ")) + "), or it has none and runs on every instance"));
        return roles.runs(role);
    }

    private boolean adapterEnabled(RouteDefinition route) {
        String provider = adapterOf(route);
        if (provider == null) {
            return true;
        }
        String key = "jobgate.provider." + provider + ".enabled";
        return setting.apply(key).map(String::trim).filter(v -> !v.isEmpty()).map(v -> {
            if (!v.equals("true") && !v.equals("false")) {
                throw new IllegalStateException("setting " + key + " must be true or false, was " + v);
            }
            return Boolean.parseBoolean(v);
        }).orElse(true);
    }

    /** The provider whose adapter {@code route} is ({@code direct:provider-<name>}), or null. */
    static String adapterOf(RouteDefinition route) {
        if (route.getInput() == null || route.getInput().getEndpointUri() == null) {
            return null;
        }
        String uri = route.getInput().getEndpointUri();
        if (!uri.startsWith("direct:")) {
            return null;
        }
        String name = uri.substring("direct:".length());
        if (name.startsWith("//")) {
            name = name.substring(2);
        }
        int query = name.indexOf('?');
        if (query >= 0) {
            name = name.substring(0, query);
        }
        return name.startsWith(ADAPTER_PREFIX) && name.length() > ADAPTER_PREFIX.length() ? name.substring(ADAPTER_PREFIX.length()) : null;
    }
}
