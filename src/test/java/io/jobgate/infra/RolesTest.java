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
