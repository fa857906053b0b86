package io.jobgate.infra;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What this instance runs ({@code jobgate.roles}): one binary, roles chosen by settings, so an
 * instance may be the API and relay while others are only workers on the same database and broker.
 * A route belongs to a role by its {@code group} ({@link RouteStartRules}); the derived placeholders
 * {@code jobgate.runs.<role>} (true/false) say the same to code and settings that ask. They are not
 * settings: they are computed here and put in as override properties.
 *
 * <p>The per-role switches of earlier versions ({@code jobgate.relay.enabled},
 * {@code jobgate.worker.enabled}, {@code jobgate.sweeper.enabled}, {@code jobgate.reconcile.enabled})
 * still work when set (environment, system property): {@code true} adds their role, {@code false}
 * removes it. They are no longer in the settings file, so unset they change nothing.
 */
public final class Roles {

    /** The setting. */
    public static final String SETTING = "jobgate.roles";

    public enum Role {
        /** The REST API (jobs, uploads, usage, webhooks, admin) and the JMS intake. */
        API(null),
        /** The outbox relay (dispatch and status events to Artemis). */
        RELAY("jobgate.relay.enabled"),
        /** Workers: consumers of jobs.dispatch, and its dead letters. */
        WORKER("jobgate.worker.enabled"),
        /** The sweeper: expired leases, lifetimes, old quarantine objects. */
        SWEEPER("jobgate.sweeper.enabled"),
        /** The poller of jobs waiting on a provider. */
        RECONCILER("jobgate.reconcile.enabled");

        private final String legacySwitch;

        Role(String legacySwitch) {
            this.legacySwitch = legacySwitch;
        }

        public String wire() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** The derived placeholder that says whether this instance runs the role. */
        public String placeholder() {
            return "jobgate.runs." + wire();
        }
    }

    private final Set<Role> roles;
    private final List<String> notes;

    private Roles(Set<Role> roles, List<String> notes) {
        this.roles = Collections.unmodifiableSet(roles);
        this.notes = List.copyOf(notes);
    }

    public static Roles from(Settings settings) {
        return parse(settings.optional(SETTING).orElse(""), key -> settings.optional(key).map(v -> {
            if (!v.equals("true") && !v.equals("false")) {
                throw new IllegalStateException("setting " + key + " must be true or false, was " + v);
            }
            return Boolean.parseBoolean(v);
        }));
    }

    /** {@code list}: the setting's value; {@code legacy}: the value of an old per-role switch, if set. */
    static Roles parse(String list, java.util.function.Function<String, Optional<Boolean>> legacy) {
        EnumSet<Role> roles = EnumSet.noneOf(Role.class);
        for (String name : list.split(",")) {
            String trimmed = name.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            Role role = Arrays.stream(Role.values()).filter(r -> r.wire().equals(trimmed)).findFirst()
                    .orElseThrow(() -> new IllegalStateException("setting " + SETTING + " names an unknown role '" + trimmed
                            + "' (known: " + Arrays.stream(Role.values()).map(Role::wire).collect(Collectors.joining(", ")) + ")"));
            roles.add(role);
        }
        List<String> notes = new ArrayList<>();
        for (Role role : Role.values()) {
            if (role.legacySwitch == null) {
                continue;
            }
            Optional<Boolean> set = legacy.apply(role.legacySwitch);
            if (set.isPresent() && set.get() != roles.contains(role)) {
                notes.add(role.legacySwitch + "=" + set.get() + (set.get() ? " adds" : " removes") + " the role " + role.wire());
                if (set.get()) {
                    roles.add(role);
                } else {
                    roles.remove(role);
                }
            }
        }
        if (roles.isEmpty()) {
            throw new IllegalStateException("setting " + SETTING + " names no role: an instance runs at least one of "
                    + Arrays.stream(Role.values()).map(Role::wire).collect(Collectors.joining(", ")));
        }
        return new Roles(roles, notes);
    }

    public boolean runs(Role role) {
        return roles.contains(role);
    }

    /** Where an old per-role switch changed what {@code jobgate.roles} says (logged at start). */
    public List<String> notes() {
        return notes;
    }

    /** The derived placeholders, {@code jobgate.runs.<role>} = true/false. */
    public Map<String, String> placeholders() {
        Map<String, String> values = new LinkedHashMap<>();
        for (Role role : Role.values()) {
            values.put(role.placeholder(), Boolean.toString(roles.contains(role)));
        }
        return values;
    }

    @Override
    public String toString() {
        return roles.stream().map(Role::wire).collect(Collectors.joining(","));
    }
}
