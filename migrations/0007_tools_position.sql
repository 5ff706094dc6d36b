-- A new watch's position is `MAX(position) + 1` over `tools`: without an index that read every
-- page of the table on each registration, so registering N watches cost O(N²) (100,000 watches:
-- 20 minutes, most of it in this scan).
CREATE INDEX tools_position ON tools (position);
