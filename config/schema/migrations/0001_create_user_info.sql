-- v1: the user table of the classic app.
CREATE TABLE user_info (
  user_id INTEGER PRIMARY KEY,
  user_name TEXT
);
