-- Log-in and PUT /api/v1/admin/users/plan find an account by lower(email), but 0010 made email unique only as
-- written: two accounts differing in letter case would share one log-in (review R2-5). No API creates users; the
-- seeds write lower-case addresses. A database that holds such a pair stops here with a unique violation naming the
-- address: merge or rename one of the two accounts, then start again.
CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email));
