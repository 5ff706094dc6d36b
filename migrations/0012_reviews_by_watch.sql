-- A watch's reviews by id (issue 33): pruning closed reviews beyond `keep_reviews` runs with
-- every queued review, inside the write transaction every writer waits for, and scanned the
-- whole table without it; superseding and forgetting a watch's reviews use it too.
CREATE INDEX reviews_watch ON reviews (watch, id);
