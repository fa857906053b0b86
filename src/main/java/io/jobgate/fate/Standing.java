package io.jobgate.fate;

import java.time.Instant;

/**
 * Where a job stands against its caps when evidence about it arrives.
 *
 * @param attemptsUsed      the attempts made so far, the one the evidence is about included (at a start: those before it)
 * @param unparseableStreak unparseable replies in a row on the stable revision so far
 */
public record Standing(int attemptsUsed, int maxAttempts, Instant expiresAt, int unparseableStreak) {
}
