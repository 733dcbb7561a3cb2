"""Model definitions shared by the decoders (``structkit.search``), the learners
(``structkit.learn``) and the tasks (``structkit.tasks``): what a model's weights are and what its
joint feature vector is. (Model *files* are ``structkit.model``.)"""
