package io.jobgate.fate;

import io.jobgate.job.RevisionRole;
import java.time.Instant;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static io.jobgate.fate.PlacementFacts.Canary.NONE;
import static io.jobgate.fate.PlacementFacts.Canary.PROMOTED;
import static io.jobgate.fate.PlacementFacts.Canary.RUNNING;
import static io.jobgate.fate.PlacementFacts.Canary.STOPPED;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where an attempt runs, as a table: each rule of the candidate's share with the placement expected, and the two
 * facts that cost a statement (the previous revision, the first-sample count under its lock) asked only when every
 * cheaper rule let the candidate through.
 */
class PlacementsTest {

    static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");
    /** A fact that must not be asked: the rules before it decided. */
    static final BooleanSupplier NOT_ASKED = () -> {
        throw new AssertionError("asked although an earlier rule decided");
    };
    static final BooleanSupplier NO = () -> false;
    static final BooleanSupplier YES = () -> true;

    record Row(String name, PlacementFacts facts, Placement expected) {
        @Override
        public String toString() {
            return name;
        }
    }

    static PlacementFacts facts(PlacementFacts.Canary canary, int soFar, boolean inShare, Instant closedUntil,
                                BooleanSupplier previous, BooleanSupplier sampleFull) {
        return new PlacementFacts(canary, soFar, 3, inShare, closedUntil, previous, sampleFull, NOW);
    }

    static Stream<Row> rows() {
        Placement candidate = new Placement.OnCandidate(RevisionRole.CANDIDATE);
        return List.of(
                new Row("no candidate loaded", facts(NONE, 0, true, null, NOT_ASKED, NOT_ASKED),
                        new Placement.Stable("no candidate loaded")),
                new Row("a promoted candidate takes every attempt, as the approved revision",
                        facts(PROMOTED, 2, false, NOW.plusSeconds(60), NOT_ASKED, NOT_ASKED), new Placement.OnCandidate(RevisionRole.STABLE)),
                new Row("a stopped canary takes none", facts(STOPPED, 0, true, null, NOT_ASKED, NOT_ASKED),
                        new Placement.Stable("its canary is stopped")),
                new Row("the job's last attempt stays the stable revision's", facts(RUNNING, 2, true, null, NOT_ASKED, NOT_ASKED),
                        new Placement.Stable("the job's last attempt is the stable revision's")),
                new Row("outside the share", facts(RUNNING, 0, false, null, NOT_ASKED, NOT_ASKED),
                        new Placement.Stable("outside the candidate's share")),
                new Row("a retry after a candidate's attempt goes to the stable revision", facts(RUNNING, 1, true, null, YES, NOT_ASKED),
                        new Placement.Stable("its previous attempt ran on the candidate")),
                new Row("the candidate's own gate closed by its 429", facts(RUNNING, 0, true, NOW.plusSeconds(30), NOT_ASKED, NOT_ASKED),
                        new Placement.Stable("the candidate's own gate is closed until " + NOW.plusSeconds(30))),
                new Row("a gate that reopened is open", facts(RUNNING, 0, true, NOW, NO, NO), candidate),
                new Row("its first sample full before its gates judged it", facts(RUNNING, 0, true, null, NO, YES),
                        new Placement.Stable("the candidate's first sample is full")),
                new Row("every rule passed: the candidate", facts(RUNNING, 0, true, null, NO, NO), candidate)).stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void places(Row row) {
        assertThat(Placements.place(row.facts())).isEqualTo(row.expected());
    }
}
