package io.jobgate.job;

import java.sql.Connection;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A provider's slots (V19): a claim takes a free slot from a random one on, wrapping around, never one
 * another transaction holds, never one past the limit; every slot can be taken, and no more.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ProviderSlotsTest {

    static final String PROVIDER = "slots-test";

    HikariDataSource pool;
    JdbcTemplate jdbc;
    ProviderSlots slots;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(3);
        jdbc = new JdbcTemplate(pool);
        slots = new ProviderSlots(jdbc);
    }

    @BeforeEach
    void noSlots() {
        jdbc.update("DELETE FROM provider_slots WHERE provider = ?", PROVIDER);
    }

    @AfterAll
    void close() {
        noSlots();
        pool.close();
    }

    @Test
    void theFirstFreeSlotFromTheStartingOneOnIsTakenWrappingAroundPastTheLast() throws Exception {
        slots.ensureRows(PROVIDER, 10);
        take(2, 3, 7, 8, 9);
        assertThat(pick(2, 10)).isEqualTo(4);
        assertThat(pick(5, 10)).isEqualTo(5);
        assertThat(pick(7, 10)).as("7, 8 and 9 taken: around to the first free").isEqualTo(0);
        assertThat(pick(3, 4)).as("3 taken, 4 to 6 free but past a limit of 4: around").isEqualTo(0);
        take(0, 1, 4, 5, 6);
        assertThat(pick(4, 10)).as("none free").isNull();
        // A slot another transaction is claiming (or freeing) is passed over, never waited for.
        jdbc.update("UPDATE provider_slots SET lease_token = NULL, job_id = NULL WHERE provider = ? AND slot IN (4, 5)", PROVIDER);
        try (Connection other = pool.getConnection()) {
            other.setAutoCommit(false);
            other.createStatement().execute("SELECT 1 FROM provider_slots WHERE provider = '" + PROVIDER + "' AND slot = 4 FOR UPDATE");
            assertThat(pick(4, 10)).isEqualTo(5);
            assertThat(pick(6, 10)).as("around, past the one held").isEqualTo(5);
            other.rollback();
        }
    }

    @Test
    void everySlotCanBeClaimedOnceAndNoneBeyondTheLimitAndTheClaimsSpread() {
        int limit = 400;
        slots.ensureRows(PROVIDER, limit);
        Set<Integer> taken = new HashSet<>();
        for (int i = 0; i < limit; i++) {
            UUID job = UUID.randomUUID();
            ProviderSlots.Claim claim = slots.claim(PROVIDER, limit, job, job, Instant.now());
            assertThat(claim.claimed()).as("claim %d of %d", i + 1, limit).isTrue();
            int slot = jdbc.queryForObject("SELECT slot FROM provider_slots WHERE job_id = ?", Integer.class, job);
            assertThat(taken.add(slot)).as("slot %d taken once", slot).isTrue();
            if (i == limit / 4 - 1) {
                // A quarter claimed, from random starting slots: spread over the slots, not the lowest quarter.
                assertThat(taken.stream().mapToInt(Integer::intValue).max().getAsInt()).isGreaterThan(limit / 2);
            }
        }
        assertThat(taken).hasSize(limit).allMatch(s -> s >= 0 && s < limit);
        UUID late = UUID.randomUUID();
        ProviderSlots.Claim full = slots.claim(PROVIDER, limit, late, late, Instant.now());
        assertThat(full.claimed()).isFalse();
        assertThat(full.rowsMissing()).isFalse();
    }

    /** The slot {@link ProviderSlots#freeSlot} picks from {@code first} on, among {@code limit}, in its own transaction. */
    private Integer pick(int first, int limit) {
        List<Integer> picked = new NamedParameterJdbcTemplate(jdbc).queryForList("SELECT " + ProviderSlots.freeSlot("true"),
                new MapSqlParameterSource().addValue("provider", PROVIDER).addValue("limit", limit).addValue("firstSlot", first),
                Integer.class);
        return picked.get(0);
    }

    private void take(int... taken) {
        for (int slot : taken) {
            UUID job = UUID.randomUUID();
            jdbc.update("UPDATE provider_slots SET lease_token = ?, job_id = ?, taken_at = now() WHERE provider = ? AND slot = ?",
                    job, job, PROVIDER, slot);
        }
    }
}
