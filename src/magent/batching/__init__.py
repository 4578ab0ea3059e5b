"""``magent batch``: one workflow over many inputs, each row an ordinary task.

inputs.py reads the rows; executor.py is the interface every engine implements (local.py
runs rows in this process, ray.py on a Ray cluster); runner.py starts and resumes batches
(their records: ``store.batches``); reading.py reads them back.
"""
