"""What two or more test modules share that is neither a fixture (``conftest.py``), test
data (``tests/data``) nor a harness for something the tests drive
(``jupyter_percent_agent.testing``): small helpers and constants, one module per topic.
A test module never imports another test module (tests/unit/test_architecture.py)."""
