-- Twin of migrations/0012_reviews_by_watch.sql: a watch's reviews by id.
CREATE INDEX reviews_watch ON reviews (watch, id);
-- Text listed in order compares bytes, as SQLite's does, whatever collation the database was
-- created with: the delivery listings order and break ties by sink name.
ALTER TABLE deliveries ALTER COLUMN sink TYPE TEXT COLLATE "C";
