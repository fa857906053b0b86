package io.jobgate.infra;

import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code jobgate.roles}: what an instance runs, and the old per-role switches on top of it. */
class RolesTest {

    static Roles parse(String list, Map<String, Boolean> legacy) {
        return Roles.parse(list, key -> Optional.ofNullable(legacy.get(key)));
    }

    /**
     * The old switches are no longer in the settings file: a route starting by one would fail the
     * start of a gateway that does not set it (tests do set them, so only the packaged jar would tell).
     */
    @Test
    void routesStartByTheirRoleNeverByAnOldSwitch() throws Exception {
        try (var files = java.nio.file.Files.list(java.nio.file.Path.of("routes"))) {
            for (java.nio.file.Path file : files.filter(f -> f.toString().endsWith(".camel.yaml")).toList()) {
                assertThat(java.nio.file.Files.readString(file)).as(file.toString())
                        .doesNotContainPattern("\\{\\{jobgate\\.(relay|worker|sweeper|reconcile)\\.enabled");
            }
        }
    }

    @Test
    void theShippedDefaultRunsEveryRole() {
        Roles all = parse("api,relay,worker,sweeper,reconciler", Map.of());
        assertThat(all.placeholders()).containsExactly(
                Map.entry("jobgate.runs.api", "true"), Map.entry("jobgate.runs.relay", "true"),
                Map.entry("jobgate.runs.worker", "true"), Map.entry("jobgate.runs.sweeper", "true"),
                Map.entry("jobgate.runs.reconciler", "true"));
        assertThat(all.notes()).isEmpty();
    }

    @Test
    void anInstanceRunsOnlyTheRolesItNamesWithSpacesAndOrderIgnored() {
        Roles workerOnly = parse(" worker ", Map.of());
        assertThat(workerOnly.runs(Roles.Role.WORKER)).isTrue();
        assertThat(workerOnly.placeholders()).containsEntry("jobgate.runs.api", "false")
                .containsEntry("jobgate.runs.relay", "false").containsEntry("jobgate.runs.sweeper", "false")
                .containsEntry("jobgate.runs.reconciler", "false");
        assertThat(parse("reconciler, api,relay", Map.of())).hasToString("api,relay,reconciler");
    }

    @Test
    void anUnknownRoleStopsTheStartNamingTheSettingAndTheKnownRoles() {
        assertThatThrownBy(() -> parse("api,workers", Map.of()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("jobgate.roles").hasMessageContaining("'workers'")
                .hasMessageContaining("api, relay, worker, sweeper, reconciler");
        // Case matters: the names are written as documented.
        assertThatThrownBy(() -> parse("API", Map.of())).hasMessageContaining("jobgate.roles");
    }

    @Test
    void anInstanceWithoutAnyRoleIsRefused() {
        assertThatThrownBy(() -> parse(" , ", Map.of())).hasMessageContaining("jobgate.roles").hasMessageContaining("no role");
        assertThatThrownBy(() -> parse("worker", Map.of("jobgate.worker.enabled", false)))
                .hasMessageContaining("no role");
    }

    @Test
    void theOldPerRoleSwitchesStillAddOrRemoveTheirRoleWhenSet() {
        Roles roles = parse("api,relay,worker,sweeper,reconciler", Map.of(
                "jobgate.worker.enabled", false, "jobgate.sweeper.enabled", false, "jobgate.relay.enabled", true));
        assertThat(roles).hasToString("api,relay,reconciler");
        assertThat(roles.notes()).containsExactly("jobgate.worker.enabled=false removes the role worker",
                "jobgate.sweeper.enabled=false removes the role sweeper");

        Roles added = parse("api", Map.of("jobgate.reconcile.enabled", true));
        assertThat(added).hasToString("api,reconciler");
        assertThat(added.notes()).containsExactly("jobgate.reconcile.enabled=true adds the role reconciler");
    }
}
