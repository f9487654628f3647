# filled in by the classifiers' author
