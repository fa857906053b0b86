-- A canary's gates read the recent attempts of one adapter revision (canary/CanaryGates).
CREATE INDEX attempts_revision_time ON attempts (adapter_revision, started_at);
