"""nvidia-smi's outputs as text parsers: ``-q`` (``query_text.py``), ``-q -x`` (``query_xml.py``), both made one
Gpu by ``build.py``; ``--query-gpu`` CSV (``query_csv.py``), the table, ``topo -m`` and ``topo -p2p``, ``nvlink
-s`` and ``-e``, the processes; ``unreadable.py``: the placeholders of GPUs nvidia-smi could not read;
``values.py`` and ``ansi.py``: the cells and colour codes. Rules as readers/."""
