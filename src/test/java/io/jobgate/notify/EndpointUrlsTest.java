package io.jobgate.notify;

import java.net.InetAddress;
import java.net.UnknownHostException;

import io.jobgate.common.ApiProblem;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The SSRF rules for endpoint URLs, names resolved by a stand-in resolver (no DNS). */
class EndpointUrlsTest {

    static EndpointUrls.Resolver resolvingTo(String... addresses) {
        return host -> {
            InetAddress[] out = new InetAddress[addresses.length];
            for (int i = 0; i < addresses.length; i++) {
                out[i] = InetAddress.getByName(addresses[i]);
            }
            return out;
        };
    }

    static String code(Runnable check) {
        try {
            check.run();
            return "accepted";
        } catch (ApiProblem p) {
            return p.code();
        }
    }

    @Test
    void aNameIsJudgedByEveryAddressItResolvesTo() {
        EndpointUrls urls = new EndpointUrls(false, "", resolvingTo("93.184.216.34"));
        assertThat(urls.check("https://hooks.example.com/jobgate").toString()).isEqualTo("https://hooks.example.com/jobgate");
        assertThat(code(() -> new EndpointUrls(false, "", resolvingTo("93.184.216.34", "10.0.0.5")).check("https://hooks.example.com/x")))
                .as("one private address among public ones").isEqualTo("webhook_url_private");
        assertThat(code(() -> new EndpointUrls(false, "", resolvingTo("::ffff:127.0.0.1")).check("https://hooks.example.com/x")))
                .as("an IPv4-mapped loopback").isEqualTo("webhook_url_private");
        assertThat(code(() -> new EndpointUrls(false, "", host -> {
            throw new UnknownHostException(host);
        }).check("https://hooks.example.com/x"))).isEqualTo("webhook_url_unresolvable");
    }

    @Test
    void anOperatorMayAllowAPrivateNetwork() {
        EndpointUrls urls = new EndpointUrls(false, "10.20.0.0/16, fd00::/8", resolvingTo("10.20.3.4"));
        assertThat(code(() -> urls.check("https://hooks.internal/x"))).isEqualTo("accepted");
        assertThat(code(() -> new EndpointUrls(false, "10.20.0.0/16", resolvingTo("10.21.0.1")).check("https://hooks.internal/x")))
                .isEqualTo("webhook_url_private");
        assertThatThrownBy(() -> new EndpointUrls(false, "10.0.0.0/33", resolvingTo())).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void plainHttpOnlyToLoopbackAndOnlyWhenAllowed() {
        assertThat(code(() -> new EndpointUrls(false, "", resolvingTo("127.0.0.1")).check("http://localhost:9/x")))
                .isEqualTo("webhook_url_insecure");
        assertThat(code(() -> new EndpointUrls(true, "", resolvingTo("127.0.0.1")).check("http://localhost:9/x"))).isEqualTo("accepted");
        assertThat(code(() -> new EndpointUrls(true, "", resolvingTo("93.184.216.34")).check("http://example.com/x")))
                .isEqualTo("webhook_url_insecure");
    }

    @Test
    void nonPublicAddresses() {
        for (String a : new String[] {"127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
                "224.0.0.1", "255.255.255.255", "198.18.0.1", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "::"}) {
            assertThat(EndpointUrls.isPublic(address(a))).as(a).isFalse();
        }
        for (String a : new String[] {"93.184.216.34", "8.8.8.8", "100.128.0.1", "172.32.0.1", "2606:4700::1111"}) {
            assertThat(EndpointUrls.isPublic(address(a))).as(a).isTrue();
        }
    }

    static InetAddress address(String literal) {
        try {
            return InetAddress.getByName(literal);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
    }
}
