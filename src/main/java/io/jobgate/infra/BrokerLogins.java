package io.jobgate.infra;

import io.jobgate.common.Digests;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import org.apache.activemq.artemis.core.security.CheckType;
import org.apache.activemq.artemis.core.security.Role;
import org.apache.activemq.artemis.spi.core.protocol.RemotingConnection;
import org.apache.activemq.artemis.spi.core.security.ActiveMQSecurityManager4;

/**
 * Who may log in to the embedded broker, and with which role of {@code artemis/broker.xml}'s
 * security settings: the gateway itself (one service user, role {@value #SERVICE_ROLE}, as the
 * admin user of a standalone broker made by {@code artemis create}) and the tenants' JMS
 * producers (role {@value #PRODUCER_ROLE}, and {@code events-<tenant>} to read their tenant's events). Passwords are kept only as SHA-256 digests. The
 * broker stamps the user name returned here on the messages it receives (only the returning
 * variants of the interface give it one; with plain booleans it stamps nothing).
 */
public final class BrokerLogins implements ActiveMQSecurityManager4 {

    public static final String SERVICE_ROLE = "amq";
    public static final String PRODUCER_ROLE = "producer";

    /** The role that may read a tenant's own status events ({@code jobs.events.<tenant>}). */
    public static String eventsRole(String tenantId) {
        return "events-" + tenantId;
    }

    private record Login(byte[] passwordSha256, Set<String> roles) {
    }

    private final Map<String, Login> logins = new LinkedHashMap<>();

    /**
     * @param producerPasswordDigests user → hex SHA-256 of its password
     * @param producerTenants         user → its tenant (its events role)
     */
    public BrokerLogins(String serviceUser, String servicePassword, Map<String, String> producerPasswordDigests,
            Map<String, String> producerTenants) {
        logins.put(serviceUser, new Login(sha256(servicePassword), Set.of(SERVICE_ROLE)));
        producerPasswordDigests.forEach((user, digest) -> {
            if (logins.containsKey(user)) {
                throw new IllegalStateException("JMS producer user '" + user + "' is the gateway's own broker user");
            }
            logins.put(user, new Login(HexFormat.of().parseHex(digest),
                    Set.of(PRODUCER_ROLE, eventsRole(producerTenants.get(user)))));
        });
        this.tenants = new java.util.TreeSet<>(producerTenants.values());
    }

    private final Set<String> tenants;

    /** The tenants with a JMS user: each gets its own events address. */
    public Set<String> tenants() {
        return tenants;
    }

    @Override
    public boolean validateUser(String user, String password) {
        Login login = user == null ? null : logins.get(user);
        return login != null && password != null && MessageDigest.isEqual(login.passwordSha256(), sha256(password));
    }

    @Override
    public boolean validateUserAndRole(String user, String password, Set<Role> roles, CheckType checkType) {
        if (!validateUser(user, password)) {
            return false;
        }
        Set<String> mine = logins.get(user).roles();
        return roles.stream().anyMatch(r -> mine.contains(r.getName()) && checkType.hasRole(r));
    }

    @Override
    public String validateUser(String user, String password, RemotingConnection connection, String securityDomain) {
        return validateUser(user, password) ? user : null;
    }

    @Override
    public String validateUserAndRole(String user, String password, Set<Role> roles, CheckType checkType,
            String address, RemotingConnection connection, String securityDomain) {
        return validateUserAndRole(user, password, roles, checkType) ? user : null;
    }

    private static byte[] sha256(String text) {
        return HexFormat.of().parseHex(Digests.sha256Hex(text.getBytes(StandardCharsets.UTF_8)));
    }
}
