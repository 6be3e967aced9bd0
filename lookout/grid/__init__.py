"""Lookout's jobs grid: what the URL asks for (``filters``, ``params``), the columns it can
show (``columns``), the keyset pages of job rows (``pages``, ``cursors``), the cells of a row
(``cells``) and each user's saved column choice (``prefs``)."""
