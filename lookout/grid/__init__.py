"""Lookout's jobs grid.

- ``filters`` (and ``filter_parsing``): what the grid is narrowed to, read from the URL, and
  the query that narrows it;
- ``params``: everything in the grid's URL (``GridParams``);
- ``columns``: the columns the grid can show; ``prefs``: each user's saved column choice;
- ``cursors`` and ``pages``: keyset pages of job rows, and rows by id;
- ``cells``: a row's cells; ``header``, ``options`` and ``page_context``: what the page shows;
- ``groups``: the grouped view's group rows.
"""
