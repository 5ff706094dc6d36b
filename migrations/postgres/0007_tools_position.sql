-- Twin of migrations/0007_tools_position.sql: a new watch's position is MAX(position) + 1.
CREATE INDEX tools_position ON tools (position);
