package io.jobgate.infra;

import java.util.Map;
import java.util.Optional;

import org.apache.camel.CamelContext;
import org.apache.camel.ServiceStatus;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.model.Model;
import org.apache.camel.model.rest.RestDefinition;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What starts where, read from plain YAML DSL files (a route's group, a provider's enabled switch, the REST
 * DSL as the role api), in a bare Camel context with only the rules bound: the same rules the gateway binds.
 */
class RouteStartRulesTest {

    static final String ROUTES = """
            - route:
                id: relay-timer
                group: relay
                from: {uri: "timer:relay-timer?period=60000&delay=60000", steps: [{log: relay}]}
            - route:
                id: worker-timer
                group: worker
                from: {uri: "timer:worker-timer?period=60000&delay=60000", steps: [{log: worker}]}
            - route:
                id: evaluation-timer
                group: evaluation
                from: {uri: "timer:evaluation-timer?period=60000&delay=60000", steps: [{log: evaluation}]}
            - route:
                id: everywhere
                from: {uri: "timer:everywhere?period=60000&delay=60000", steps: [{log: everywhere}]}
            - route:
                id: held-by-its-file
                autoStartup: false
                from: {uri: "timer:held?period=60000&delay=60000", steps: [{log: held}]}
            - route:
                id: provider-offbydefault
                from: {uri: "direct:provider-offbydefault", steps: [{log: off}]}
            - route:
                id: provider-switchedon
                from: {uri: "direct://provider-switchedon", steps: [{log: on}]}
            - route:
                id: provider-noswitch
                from: {uri: "direct:provider-noswitch", steps: [{log: none}]}
            - rest:
                id: rest-api
                path: /v1
                get:
                  - {id: get-thing, path: /thing, to: "direct:thing"}
            - route:
                id: thing
                from: {uri: "direct:thing", steps: [{log: thing}]}
            """;

    static final Map<String, String> SETTINGS = Map.of(
            "jobgate.provider.offbydefault.enabled", "false",
            "jobgate.provider.switchedon.enabled", " true ");

    static CamelContext started(String roles, boolean evaluationEnabled, String yaml) throws Exception {
        CamelContext context = new DefaultCamelContext();
        context.getRegistry().bind("routeStartRules", new RouteStartRules(RolesTest.parse(roles, Map.of()), evaluationEnabled,
                key -> Optional.ofNullable(SETTINGS.get(key))));
        PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.fromString("rules.camel.yaml", yaml));
        context.start();
        return context;
    }

    static ServiceStatus status(CamelContext context, String routeId) {
        return context.getRouteController().getRouteStatus(routeId);
    }

    @Test
    void aWorkerOnlyInstanceBuildsEveryRouteButStartsOnlyItsOwnAndTheRolelessOnes() throws Exception {
        try (CamelContext context = started("worker", true, ROUTES)) {
            assertThat(status(context, "worker-timer")).isEqualTo(ServiceStatus.Started);
            assertThat(status(context, "evaluation-timer")).as("worker and evaluation enabled").isEqualTo(ServiceStatus.Started);
            assertThat(status(context, "everywhere")).isEqualTo(ServiceStatus.Started);
            assertThat(status(context, "relay-timer")).as("built, as autoStartup false builds it, not started").isEqualTo(ServiceStatus.Stopped);
            assertThat(status(context, "held-by-its-file")).isEqualTo(ServiceStatus.Stopped);
            // No role api: the REST DSL is disabled, so none of its routes is built; the direct route it calls stays.
            RestDefinition rest = context.getCamelContextExtension().getContextPlugin(Model.class).getRestDefinitions().get(0);
            assertThat(rest.getDisabled()).isEqualTo("true");
            assertThat(context.getRoute("get-thing")).isNull();
            assertThat(status(context, "thing")).isEqualTo(ServiceStatus.Started);
        }
    }

    @Test
    void anInstanceWithoutWorkersRunsNoEvaluationEvenWhenItIsEnabled() throws Exception {
        try (CamelContext context = started("relay,sweeper", true, ROUTES.substring(0, ROUTES.indexOf("- rest:")))) {
            assertThat(status(context, "relay-timer")).isEqualTo(ServiceStatus.Started);
            assertThat(status(context, "worker-timer")).isEqualTo(ServiceStatus.Stopped);
            assertThat(status(context, "evaluation-timer")).isEqualTo(ServiceStatus.Stopped);
        }
        try (CamelContext context = started("worker", false, ROUTES.substring(0, ROUTES.indexOf("- rest:")))) {
            assertThat(status(context, "evaluation-timer")).as("evaluation switched off").isEqualTo(ServiceStatus.Stopped);
        }
    }

    @Test
    void anAdapterStartsUnlessItsProviderIsSwitchedOff() throws Exception {
        try (CamelContext context = started("worker", false, ROUTES.substring(0, ROUTES.indexOf("- rest:")))) {
            assertThat(status(context, "provider-offbydefault")).isEqualTo(ServiceStatus.Stopped);
            assertThat(status(context, "provider-switchedon")).isEqualTo(ServiceStatus.Started);
            assertThat(status(context, "provider-noswitch")).as("no switch: started, as before").isEqualTo(ServiceStatus.Started);
        }
    }

    @Test
    void aFileReadWhileRunningIsHeldToTheSameRules() throws Exception {
        try (CamelContext context = started("worker", false, ROUTES.substring(0, ROUTES.indexOf("- rest:")))) {
            PluginHelper.getRoutesLoader(context).updateRoutes(ResourceHelper.fromString("late.camel.yaml", """
                    - route:
                        id: provider-late
                        from: {uri: "direct:provider-offbydefault-late", steps: [{log: late}]}
                    - route:
                        id: late-relay
                        group: relay
                        from: {uri: "timer:late-relay?period=60000&delay=60000", steps: [{log: late}]}
                    """));
            assertThat(status(context, "provider-late")).isEqualTo(ServiceStatus.Started);
            assertThat(status(context, "late-relay")).isEqualTo(ServiceStatus.Stopped);
        }
    }

    @Test
    void aGroupThatIsNoRoleStopsTheStartNamingTheRoute() {
        assertThatThrownBy(() -> started("worker", false, """
                - route:
                    id: typo
                    group: workers
                    from: {uri: "timer:typo?period=60000", steps: [{log: typo}]}
                """)).hasStackTraceContaining("route typo names the group 'workers'")
                .hasStackTraceContaining("api, relay, worker, sweeper, reconciler, evaluation");
    }

    @Test
    void aSwitchThatIsNeitherTrueNorFalseStopsTheStartNamingTheSetting() {
        assertThatThrownBy(() -> {
            CamelContext context = new DefaultCamelContext();
            context.getRegistry().bind("routeStartRules", new RouteStartRules(RolesTest.parse("worker", Map.of()), false,
                    key -> Optional.of("yes")));
            PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.fromString("bad.camel.yaml", """
                    - route:
                        id: provider-bad
                        from: {uri: "direct:provider-bad", steps: [{log: bad}]}
                    """));
        }).hasStackTraceContaining("setting jobgate.provider.bad.enabled must be true or false, was yes");
    }
}
