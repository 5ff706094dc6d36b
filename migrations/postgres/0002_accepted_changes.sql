-- Twin of migrations/0002_accepted_changes.sql: a history row written by `pending accept`
-- records the ids (`chg1:…`) of the changes the reviewer accepted, as a JSON array.
ALTER TABLE tool_versions ADD COLUMN accepted_changes TEXT;
