"""Privacy verification: exact privacy profiles and a black-box auditor."""
