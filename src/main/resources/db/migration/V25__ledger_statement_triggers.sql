-- Admission (issue 12): the ledger's two AFTER INSERT triggers ran once per row. An admission batch
-- inserts one debit per job in one statement, so a batch of n jobs of one tenant ran 2n PL/pgSQL
-- calls and updated that tenant's account row n times (n row versions of one hot row, in the
-- transaction that holds its lock). Now they run once per statement over its new rows (a transition
-- table): the balance gets one UPDATE per tenant with the sum of the statement's amounts, in tenant
-- order (the order the admission's batch already locked them in), and the usage queue one INSERT of
-- the same rows as before. Same results at the end of every statement: AFTER triggers, row or
-- statement level, fire when the statement's rows are all written.

DROP TRIGGER ledger_balance ON ledger;
DROP TRIGGER ledger_usage ON ledger;

CREATE FUNCTION ledger_apply_to_balances() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT tenant_id, sum(amount_micros)::bigint AS amount FROM new_entries GROUP BY tenant_id ORDER BY tenant_id LOOP
        UPDATE tenant_accounts SET balance_micros = balance_micros + t.amount WHERE tenant_id = t.tenant_id;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER ledger_balance AFTER INSERT ON ledger
    REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_apply_to_balances();

CREATE FUNCTION ledger_queue_usages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_pending (entry_id)
    SELECT entry_id FROM new_entries WHERE entry_type IN ('debit', 'refund') ORDER BY entry_id;
    RETURN NULL;
END $$;
CREATE TRIGGER ledger_usage AFTER INSERT ON ledger
    REFERENCING NEW TABLE AS new_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_queue_usages();

-- The row-level functions are no longer used by any trigger.
DROP FUNCTION ledger_apply_to_balance();
DROP FUNCTION ledger_queue_usage();
