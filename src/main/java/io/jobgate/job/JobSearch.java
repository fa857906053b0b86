package io.jobgate.job;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The operator's job search (the console and {@code GET /v1/admin/jobs}), over every tenant: by filters, newest first, a page at a time; or one job found by its id
 * or its idempotency key. Job ids are UUID version 7 ({@code job.JobIds}), so "newest first" and a time range are ranges
 * of the primary key, and the next page starts below the last id shown (a cursor, stable while jobs arrive). Each filter
 * narrows what an index already orders: a tenant (with or without a status) has its listing index, failed and cancelled
 * jobs theirs ({@code V43}); the rest walk the primary key backwards, most recent first, until the page is full.
 */
public final class JobSearch {

    /** At most this many jobs per page. */
    public static final int MAX_LIMIT = 100;
    /** Counted exactly up to this many; beyond, the count says "more than" (a count must not cost a scan of the history). */
    public static final int COUNT_CAP = 10_000;

    private final JdbcTemplate jdbc;

    public JobSearch(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * What to look for; each field null (or blank) when not asked. {@code from} inclusive, {@code to} exclusive,
     * {@code before} the last job id of the previous page.
     */
    public record Filter(String tenant, JobStatus status, String kind, String provider, String preset, String category,
                         Instant from, Instant to, UUID before, int limit) {

        public Filter {
            if (limit < 1 || limit > MAX_LIMIT) {
                throw new IllegalArgumentException("limit " + limit + " is not 1-" + MAX_LIMIT);
            }
        }

        /** Whether anything narrows the search (a page cursor does not). */
        public boolean narrowed() {
            return tenant != null || status != null || kind != null || provider != null || preset != null || category != null
                    || from != null || to != null;
        }
    }

    /** One page: its jobs, the cursor of the next page (null on the last), and how many match in all (capped). */
    public record Page(List<Job> jobs, UUID next, long count, boolean countCapped) {
    }

    public Page search(Filter filter) {
        List<Object> args = new ArrayList<>();
        String where = where(filter, args);
        List<Object> pageArgs = new ArrayList<>(args);
        String ids = "SELECT job_id FROM jobs WHERE " + where + (filter.before() != null ? " AND job_id < ?" : "")
                + " ORDER BY job_id DESC LIMIT ?";
        if (filter.before() != null) {
            pageArgs.add(filter.before());
        }
        pageArgs.add(filter.limit() + 1);
        // The page's ids first, from an index alone, then their rows by key (as JobStore.list, for the same reason).
        List<Job> found = jdbc.query("SELECT " + JobStore.COLUMNS + " FROM jobs WHERE job_id = ANY (ARRAY(" + ids + "))"
                + " ORDER BY job_id DESC", JobStore::map, pageArgs.toArray());
        UUID next = null;
        if (found.size() > filter.limit()) {
            found = found.subList(0, filter.limit());
            next = found.get(found.size() - 1).id();
        }
        List<Object> countArgs = new ArrayList<>(args);
        countArgs.add(COUNT_CAP + 1);
        Long counted = jdbc.queryForObject("SELECT count(*) FROM (SELECT 1 FROM jobs WHERE " + where + " LIMIT ?) matching",
                Long.class, countArgs.toArray());
        long count = counted == null ? 0 : counted;
        return new Page(List.copyOf(found), next, Math.min(count, COUNT_CAP), count > COUNT_CAP);
    }

    /**
     * The jobs a text names: the job of that id, or the jobs with that idempotency key (one per tenant at most), newest
     * first. A key is looked up tenant by tenant through each one's unique key index: no index on the key alone is kept
     * for this (the hot path would write it on every change of a job).
     */
    public List<Job> find(String text) {
        String wanted = text.strip();
        Optional<UUID> id = uuid(wanted);
        if (id.isPresent()) {
            List<Job> byId = jdbc.query("SELECT " + JobStore.COLUMNS + " FROM jobs WHERE job_id = ?", JobStore::map, id.get());
            if (!byId.isEmpty()) {
                return byId;
            }
        }
        return jdbc.query("SELECT " + JobStore.COLUMNS + " FROM jobs WHERE (tenant_id, idempotency_key) IN"
                + " (SELECT tenant_id, ? FROM tenants) ORDER BY job_id DESC", JobStore::map, wanted);
    }

    private static String where(Filter f, List<Object> args) {
        List<String> terms = new ArrayList<>();
        term(terms, args, "tenant_id = ?", f.tenant());
        if (f.status() != null) {
            // Written into the statement, not bound: a plan made for any status (a prepared statement's generic plan,
            // after its fifth run) cannot use the index of failed and cancelled jobs, and walked the whole history.
            terms.add("status = '" + f.status().wire() + "'");
        }
        term(terms, args, "kind = ?", f.kind());
        term(terms, args, "provider = ?", f.provider());
        term(terms, args, "preset_id = ?", f.preset());
        term(terms, args, "error_category = ?", f.category());
        if (f.from() != null) {
            terms.add("job_id >= ?");
            args.add(firstIdAt(f.from()));
        }
        if (f.to() != null) {
            terms.add("job_id < ?");
            args.add(firstIdAt(f.to()));
        }
        return terms.isEmpty() ? "true" : String.join(" AND ", terms);
    }

    private static void term(List<String> terms, List<Object> args, String sql, String value) {
        if (value != null && !value.isBlank()) {
            terms.add(sql);
            args.add(value);
        }
    }

    /** The lowest UUID version 7 of the millisecond {@code at}: every job created at or after it has an id at or above. */
    public static UUID firstIdAt(Instant at) {
        return new UUID(Math.max(0, at.toEpochMilli()) << 16, 0L);
    }

    private static Optional<UUID> uuid(String text) {
        if (!text.matches("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")) {
            return Optional.empty();
        }
        return Optional.of(UUID.fromString(text));
    }
}
