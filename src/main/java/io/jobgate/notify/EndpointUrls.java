package io.jobgate.notify;

import io.jobgate.common.ApiProblem;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Which URLs a tenant's endpoint may have: {@code https} (plain {@code http} only to a loopback
 * address, and only when the setting allows it, for development), no user info, and a host whose
 * every address is public: loopback, private, link-local (cloud metadata at 169.254.169.254
 * included), shared (100.64/10), unique-local, multicast and unspecified addresses are refused unless
 * a network the operator allowed contains them. Checked when an endpoint is saved and again before
 * each send (a name may resolve elsewhere by then).
 */
public final class EndpointUrls {

    /** A network an operator allowed, e.g. {@code 10.20.0.0/16}. */
    record Network(byte[] prefix, int bits) {
        static Network parse(String cidr) {
            String[] parts = cidr.trim().split("/");
            try {
                byte[] address = InetAddress.getByName(parts[0]).getAddress();
                int bits = parts.length == 2 ? Integer.parseInt(parts[1]) : address.length * 8;
                if (bits < 0 || bits > address.length * 8) {
                    throw new IllegalArgumentException();
                }
                return new Network(address, bits);
            } catch (UnknownHostException | IllegalArgumentException e) {
                throw new IllegalStateException("setting jobgate.tenant-webhooks.allowed-networks: '" + cidr
                        + "' is not an address or CIDR network", e);
            }
        }

        boolean contains(InetAddress address) {
            byte[] a = address.getAddress();
            if (a.length != prefix.length) {
                return false;
            }
            for (int i = 0; i < bits; i++) {
                int mask = 0x80 >> (i % 8);
                if ((a[i / 8] & mask) != (prefix[i / 8] & mask)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** How names resolve (a test's stand-in resolver, or DNS). */
    @FunctionalInterface
    public interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private final boolean httpLoopback;
    private final List<Network> allowed;
    private final Resolver resolver;

    /**
     * @param httpLoopback plain http to a loopback address is allowed (development; never in production)
     * @param allowedNetworks comma-separated networks whose addresses are allowed although not public
     */
    public EndpointUrls(boolean httpLoopback, String allowedNetworks, Resolver resolver) {
        this.httpLoopback = httpLoopback;
        this.resolver = resolver;
        List<Network> networks = new ArrayList<>();
        if (allowedNetworks != null) {
            for (String cidr : allowedNetworks.split(",")) {
                if (!cidr.isBlank()) {
                    networks.add(Network.parse(cidr));
                }
            }
        }
        this.allowed = List.copyOf(networks);
    }

    /** The URL as saved, or a 422 that says what is wrong with it. */
    public URI check(String url) {
        if (url == null || url.isBlank()) {
            throw ApiProblem.invalidInput("url", "An endpoint needs a url.");
        }
        if (url.length() > 2000) {
            throw ApiProblem.invalidInput("url", "An endpoint's url is at most 2000 characters.");
        }
        URI uri;
        try {
            uri = new URI(url.trim());
        } catch (URISyntaxException e) {
            throw ApiProblem.invalidInput("url", "'" + url + "' is not a URL.");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!uri.isAbsolute() || uri.getHost() == null || !(scheme.equals("https") || scheme.equals("http"))) {
            throw ApiProblem.invalidInput("url", "An endpoint's url is an absolute https URL with a host.");
        }
        if (uri.getRawUserInfo() != null) {
            throw ApiProblem.invalidInput("url", "An endpoint's url carries no user name or password.");
        }
        if (uri.getRawFragment() != null) {
            throw ApiProblem.invalidInput("url", "An endpoint's url has no fragment.");
        }
        if (scheme.equals("http")) {
            // Plain http only to this machine, in development: never resolved when not allowed at all.
            if (!httpLoopback || !addresses(uri.getHost()).stream().allMatch(InetAddress::isLoopbackAddress)) {
                throw ApiProblem.of(422, "webhook_url_insecure", "An endpoint's url must be https.").with("field", "url");
            }
            return uri;
        }
        List<InetAddress> addresses = addresses(uri.getHost());
        for (InetAddress address : addresses) {
            if (!isPublic(address) && allowed.stream().noneMatch(n -> n.contains(address))
                    && !(httpLoopback && address.isLoopbackAddress())) {
                throw ApiProblem.of(422, "webhook_url_private", "The endpoint's host " + uri.getHost() + " resolves to "
                        + address.getHostAddress() + ", a " + kind(address) + " address; webhooks go to public addresses only.")
                        .with("field", "url");
            }
        }
        return uri;
    }

    private List<InetAddress> addresses(String host) {
        try {
            InetAddress[] resolved = resolver.resolve(host.startsWith("[") ? host.substring(1, host.length() - 1) : host);
            if (resolved.length == 0) {
                throw new UnknownHostException(host);
            }
            return List.of(resolved);
        } catch (UnknownHostException e) {
            throw ApiProblem.of(422, "webhook_url_unresolvable", "The endpoint's host " + host + " does not resolve.")
                    .with("field", "url");
        }
    }

    /** Whether a packet to this address leaves for the public internet. */
    static boolean isPublic(InetAddress address) {
        if (address.isAnyLocalAddress() || address.isLoopbackAddress() || address.isLinkLocalAddress()
                || address.isSiteLocalAddress() || address.isMulticastAddress()) {
            return false;
        }
        byte[] a = address.getAddress();
        if (address instanceof Inet4Address) {
            int b0 = a[0] & 0xff;
            int b1 = a[1] & 0xff;
            return !(b0 == 0 // "this" network
                    || (b0 == 100 && b1 >= 64 && b1 < 128) // shared address space (carrier NAT)
                    || (b0 == 192 && b1 == 0 && (a[2] & 0xff) == 0) // IETF protocol assignments
                    || (b0 == 198 && (b1 == 18 || b1 == 19)) // benchmarking
                    || b0 >= 240); // reserved, broadcast
        }
        if (address instanceof Inet6Address) {
            if ((a[0] & 0xfe) == 0xfc) {
                return false; // unique local fc00::/7
            }
            boolean mapped = true; // ::ffff:a.b.c.d: judged as the IPv4 address it carries
            for (int i = 0; i < 10; i++) {
                mapped &= a[i] == 0;
            }
            if (mapped && (a[10] & 0xff) == 0xff && (a[11] & 0xff) == 0xff) {
                try {
                    return isPublic(InetAddress.getByAddress(new byte[] {a[12], a[13], a[14], a[15]}));
                } catch (UnknownHostException e) {
                    return false;
                }
            }
        }
        return true;
    }

    private static String kind(InetAddress address) {
        if (address.isLoopbackAddress()) {
            return "loopback";
        }
        if (address.isLinkLocalAddress()) {
            return "link-local";
        }
        if (address.isSiteLocalAddress()) {
            return "private";
        }
        return "non-public";
    }
}
