"""State views: the part of a large state a tool call can read (DESIGN.md, "State views").

Contract
--------
``compute_view(state, tool_name, arguments, tool_source, schema) -> View``

* **Inputs only.** A view is computed from the state, the call (tool name, argument values), the tool's
  source code and its schema. The call is never executed and no label (observation, next state, patch)
  is looked at. The state is only *read*: to follow references and to filter scans.
* **Derivation** (``analysis.py``): the tool function (``invoke(data, **kwargs)`` for τ-bench,
  a ``self`` method for EnvSim environments) and the helpers its code defines are interpreted abstractly
  over the AST. Subscript chains from ``self``/``data`` through argument values
  (``data["orders"][order_id]``, ``.get(...)``) become paths; a state value used as a key is read and
  followed (``users[order["user_id"]]["payment_methods"][payment_method_id]``, an order's items ->
  ``products[product_id]["variants"][new_item_id]``); loops and comprehensions over a collection read
  the fields the body reads (a projection), and an equality test of a loop record's field against a
  known value (``profile["email"].lower() == email.lower()``) keeps only the matching records, with a
  filter note for the rest. Pure operations on argument values are folded (f-strings, arithmetic,
  ``str`` methods). Loops are interpreted twice (fixpoint for values carried across iterations); the
  whole analysis has a step budget (``MAX_STEPS``) and widens to the whole state when it is spent, and
  anything it cannot resolve widens to the whole subtree (never to less).
* **Paths are full-state paths.** The view's JSON holds the needed subtrees at their own paths, so a
  patch predicted against the view applies to the full state; scoring (FM, CM) stays on the full state.
  Lists are shown whole (indices stay valid).
* **What it leaves out** (``View.notes()``): every partly shown object names what is missing — for a
  collection of records, how many are not shown and what their keys look like (shapes and examples);
  for a record, the fields not shown. It answers the membership questions the call asks
  (``/orders has no key "#W999"``), lists a key set the code reads when it is not shown whole, and
  states each scan filter (``/users: records whose email equals "x" (ignoring case): a, b; no other
  record matches``).
* **Limits.** Static analysis over-approximates (both branches, all candidate values), so a view can
  hold more than one execution reads; it cannot see reads hidden behind code it does not have
  (``getattr`` by computed name, ``eval``), and a filter relies on the equality as written.
* **Measurement** (``tracing.py``, construction time only, never used to build a view): the real call
  runs on the state wrapped in recording dict/list proxies that log every read. **Read coverage** is
  the share of calls whose traced reads all lie inside the view: a value read inside a shown subtree or
  at a shown path, a missing key the view names as missing, a key set the view shows or lists, or a
  scan read answered by a filter note. View size is counted in Qwen tokens (``envsim.tokens``).
  ``benchmarks/view_coverage.py`` prints the figures. Reading back what the call itself wrote is not a
  read of the state; ``traced_env`` also traces top-level attributes (``self.today``) of EnvSim environments.
* **Object models.** Code that reaches the state through an object model rebuilt from the dump
  (``self.db.orders[order_id].status``, ``order.items``, ``user.email == email`` in a scan) is read like
  subscripts: ``self.db`` stands for the whole state when the code goes on to a top-level key through it,
  attribute chains on state values are field reads, calls handed to other objects whose code the tool code
  holds (``tools.X.invoke(data, ...)``, ``self._kit.lookup(...)``) are followed. Such a model is rebuilt from
  the whole dump, so its records are shown whole and every top-level collection is present. ``len`` of a dict
  of the model (``len(self.db.reviews)`` for a new id) is a known number: the view shows the dict without the
  records it only counts, and the note on it says how many it leaves out (``View.sizes``; code over plain dicts
  keeps reading the key set, so built-in views are unchanged). A ``raise`` that
  every path reaching it takes (its tests folded on known values: ``order_id not in self.db.orders``) ends
  the analysis, as it ends the call.
* **Lists of records** (``partial_lists.py``, object models only): a top-level list of records that the code only
  scans (``for c in self.db.customers: if c.customer_id == customer_id``) is shown in part, as an object keyed by
  list index holding the records the scan keeps (a JSON pointer does not tell an index from a key, so patches stay
  full-state paths), with a note giving its length; the call runs on it as the list of its shown records and the
  patch is mapped back to full-state indices. ``len``, indexing and sorting see the list whole. A scan over a large
  list (a flight search over 320 flight objects) shows the records its first equality keeps, with the filter note.
* **SQL** (``sql_reads.py``): a class whose tools read the state through SQLite (tables as top-level lists of rows
  loaded into a database each call) is shown the rows its SQL reads, traced at construction with
  ``sqlite3``'s trace callback and authorizer (the equalities of each statement's WHERE/ON, the rows they
  reference by foreign key, the last row of a table it inserts into); the rows are stored on the record
  (``view.rows``) so eval renders the same view, and verification widens as for any view.
* **Verified at construction** (``verify.py``): for the user's own environments every view is run alone on the
  record it belongs to (a dict the call only counts gets stand-ins for the entries the view leaves out: keys no
  real entry has, each a copy of one left-out entry, so ``len`` counts right and a read of them still fails);
  one that does not reproduce the record is widened (whole records, whole collections,
  the whole state), counted per tool and noted in the prompt, and the widening is stored on the record
  (``view``) so ``compute_view(..., widening=...)`` renders exactly the verified view at eval time.
* **Runs alone** (``oracle.py``): every container the code reaches (membership tests, scans, writes) is in
  the view, possibly empty, records keep the full state's key order, a scan's tested fields are shown on
  every record of that collection the view holds, and values the call writes are followed when it reads
  them back; so the real tool run on the view alone gives the true observation and a patch that turns the
  full state into the true next state (the oracle through views, FM = CM = 100% on every track measured).

Prompt mode ``mdp-view`` (prompt version 3, ``envsim.evaluation.prompting.prompts``) shows ``View.render()``
instead of the state.
"""

from envsim.envs.views.analysis import ReadNeeds, analyse_reads
from envsim.envs.views.tracing import ReadLog, trace_call, traced, traced_env, unwrap
from envsim.envs.views.view import View, build_view, compute_view

__all__ = ["ReadLog", "ReadNeeds", "View", "analyse_reads", "build_view", "compute_view", "trace_call", "traced",
           "traced_env", "unwrap"]
