/**
 * Usage and cost per tenant from rollups: the roll-up step that folds pending ledger entries and
 * billing changes into day rows, and the report that reads day rows, the pending tail and the raw
 * rows of a range's partial days — so a report costs what its days cost, not what history costs.
 *
 * <p>May use: nothing of jobgate.
 */
package io.jobgate.usage;
