"""URL slugs for page titles: "Hello, World!" -> "hello-world"."""


def slugify(title, max_length=40):
    """Return the slug of TITLE: lowercase ASCII letters and digits, words joined by single
    hyphens, no hyphen at either end, at most MAX_LENGTH characters (cut at a word boundary
    when possible). Accented letters lose their accents ("Café" -> "cafe"); any other character
    separates words. Raise ValueError when nothing is left ("!!!", "")."""
    raise NotImplementedError("slugify is not written yet")
