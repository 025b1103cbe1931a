-- Claims on outbox rows (the async store contract, src/store/contract.ts): a deliverer leases the rows it is
-- sending, so that a second deliverer (a bot taking over from one that died) never sends them too; a lease that
-- outlives its holder expires at `claimed_until`.
ALTER TABLE outbox ADD COLUMN claimed_by TEXT;
ALTER TABLE outbox ADD COLUMN claimed_until INTEGER;
