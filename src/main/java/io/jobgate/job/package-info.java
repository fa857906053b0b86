/**
 * A job's life: its record and statuses, the state machine (JobTransitions: every status change, its effects, the one finalize), error categories, job ids, and the jobs table's queries as typed records (JobStore: the API's reads; JobRows: the background parts' rows; JobConditions: yes/no questions about one job; JobSchedules: the check and retry schedule columns; JobCounts: the meters' counts). A job status is written into SQL only here.
 *
 * <p>May use: common.
 */
package io.jobgate.job;
